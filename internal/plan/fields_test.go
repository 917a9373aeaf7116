package plan

import (
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/workload"
)

// creatorFields is the fieldsV1 of the managedFields entry of a client
// that created a Deployment (as the API server writes it for kubectl
// create), with an opt-in annotation.
const creatorFields = `{"f:metadata":{"f:annotations":{".":{},"f:reloader.stakater.com/auto":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:configMapKeyRef":{}}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/etc/cfg\"}":{".":{},"f:mountPath":{},"f:name":{}}}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"cfg\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}}}}}}}`

// revisionFields is the Deployment controller's entry: the revision
// annotation only.
const revisionFields = `{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`

// TestOwnsSpecOrAnnotations: the entries that date a pod template or
// opt-in write, and those that do not, including malformed fieldsV1 (which
// owns nothing).
func TestOwnsSpecOrAnnotations(t *testing.T) {
	cases := map[string]struct {
		raw  string // the entry's fieldsV1
		want bool
	}{
		"the creator's entry":                       {creatorFields, true},
		"the spec alone":                            {`{"f:spec":{}}`, true},
		"the spec, spaced":                          {" {\n\t\"f:spec\" : { } } ", true},
		"the spec, its name escaped":                {`{"f\u003aspec":{}}`, true},
		"the spec after metadata that is no object": {`{"f:metadata":1,"f:spec":{}}`, true},
		"an opt-in annotation":                      {`{"f:metadata":{"f:annotations":{"f:reroll.dev/auto":{}}}}`, true},
		"an annotation without a domain":            {`{"f:metadata":{"f:annotations":{"f:note":{}}}}`, true},
		"an annotation of a lookalike domain":       {`{"f:metadata":{"f:annotations":{"f:notkubernetes.io/x":{}}}}`, true},
		"an annotation whose slash is escaped":      {`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io\/revision":{},"f:a\u002fb":{}}}}`, true},
		"the Deployment controller's revision":      {revisionFields, false},
		"kubernetes.io itself":                      {`{"f:metadata":{"f:annotations":{"f:kubernetes.io/x":{}}}}`, false},
		"labels only":                               {`{"f:metadata":{"f:labels":{"f:team":{}}}}`, false},
		"the later of two metadata members counts":  {`{"f:metadata":{"f:annotations":{"f:a/b":{}}},"f:metadata":{"f:labels":{}}}`, false},
		"the later of two annotations members":      {`{"f:metadata":{"f:annotations":{"f:kubernetes.io/a":{}},"f:annotations":{"f:a":{}}}}`, true},
		"a member without the f: prefix":            {`{"f:metadata":{"f:annotations":{".":{},"a/b":{}}}}`, false},
		"null annotations":                          {`{"f:metadata":{"f:annotations":null}}`, false},
		"null metadata":                             {`{"f:metadata":null}`, false},
		"null":                                      {`null`, false},
		"an array":                                  {`[{"f:spec":{}}]`, false},
		"truncated after the spec":                  {`{"f:spec":{}`, false},
		"trailing garbage":                          {`{"f:spec":{}} x`, false},
		"empty":                                     {``, false},
		"invalid deep inside":                       {`{"f:metadata":{"f:annotations":{"f:a":{}}},"x":[1,]}`, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &metav1.FieldsV1{Raw: []byte(tc.raw)}
			if got := ownsSpecOrAnnotations(f); got != tc.want {
				t.Errorf("ownsSpecOrAnnotations(%s) = %t, want %t", tc.raw, got, tc.want)
			}
		})
	}
	if ownsSpecOrAnnotations(nil) {
		t.Error("no fieldsV1 owns a field")
	}
}

// BenchmarkOwnsSpecOrAnnotations: the creator's and the Deployment
// controller's entries.
func BenchmarkOwnsSpecOrAnnotations(b *testing.B) {
	creator, revision := &metav1.FieldsV1{Raw: []byte(creatorFields)}, &metav1.FieldsV1{Raw: []byte(revisionFields)}
	b.ReportAllocs()
	for b.Loop() {
		ownsSpecOrAnnotations(creator)
		ownsSpecOrAnnotations(revision)
	}
}

// writtenAtBefore is WrittenAt as it was before it skipped the entries no
// later than the time found so far, the same ownsSpecOrAnnotations.
func writtenAtBefore(obj metav1.Object) time.Time {
	at := obj.GetCreationTimestamp().Time
	for _, e := range obj.GetManagedFields() {
		if e.Time == nil || e.Time.Time.Before(at) {
			continue
		}
		if e.Manager == SummaryManager || (e.Manager != workload.FieldManager && e.Subresource == "" && ownsSpecOrAnnotations(e.FieldsV1)) {
			at = e.Time.Time
		}
	}
	return at.UTC()
}

// TestWrittenAt_AsBefore: on random managedFields (times around the
// creation, in any order and time zone, managers including Reroll's and
// the cache's summary, subresources, fields owning the spec, annotations,
// labels or malformed), WrittenAt answers exactly as before.
func TestWrittenAt_AsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 39))
	created := time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("east", 3600), time.Local}
	managers := []string{"kubectl", "kube-controller-manager", workload.FieldManager, SummaryManager, "argocd"}
	fields := []string{creatorFields, revisionFields, `{"f:spec":{}}`, `{"f:metadata":{"f:labels":{"f:a":{}}}}`,
		`{"f:metadata":{"f:annotations":{"f:reroll.dev/auto":{}}}}`, `{"f:spec":`, `null`, ``}
	for i := range 20000 {
		meta := &metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created.In(zones[rng.IntN(len(zones))]))}
		for range rng.IntN(5) {
			e := metav1.ManagedFieldsEntry{Manager: managers[rng.IntN(len(managers))]}
			if rng.IntN(4) == 0 {
				e.Subresource = "status"
			}
			if rng.IntN(8) != 0 {
				tm := metav1.NewTime(created.Add(time.Duration(rng.IntN(5)-2) * time.Second).In(zones[rng.IntN(len(zones))]))
				e.Time = &tm
			}
			if rng.IntN(8) != 0 {
				e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(fields[rng.IntN(len(fields))])}
			}
			meta.ManagedFields = append(meta.ManagedFields, e)
		}
		got, want := WrittenAt(meta), writtenAtBefore(meta)
		if got != want || got.Location() != want.Location() {
			t.Fatalf("case %d: WrittenAt = %v, before %v (managedFields %+v)", i, got, want, meta.ManagedFields)
		}
	}
}
