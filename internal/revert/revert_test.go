package revert

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/envtrim"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestDetect(t *testing.T) {
	p := &Patch{Before: "old", After: "new", At: t0}
	cases := map[string]struct {
		// patch is Reroll's record of its last change; nil when none.
		patch *Patch
		// current is the fingerprint of the template now.
		current string
		// since is how long after the change the check runs.
		since time.Duration
		// want is whether it is a revert.
		want bool
	}{
		"no record": {patch: nil, current: "old", want: false},
		"the template Reroll wrote is still there":                            {patch: p, current: "new", since: time.Second, want: false},
		"the old template is back at once":                                    {patch: p, current: "old", since: time.Second, want: true},
		"the old template is back within the window":                          {patch: p, current: "old", since: Window, want: true},
		"the old template is back after the window: a rollback, not a revert": {patch: p, current: "old", since: Window + time.Second, want: false},
		"someone changed something else":                                      {patch: p, current: "other", since: time.Second, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Detect(tc.patch, tc.current, t0.Add(tc.since))).To(Equal(tc.want))
		})
	}
}

func TestManager(t *testing.T) {
	template := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{"f:metadata":{}}}}`)}
	replicas := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}
	at := func(s int) *metav1.Time { return &metav1.Time{Time: t0.Add(time.Duration(s) * time.Second)} }
	cases := map[string]struct {
		// fields are the object's managedFields.
		fields []metav1.ManagedFieldsEntry
		// want is the manager named.
		want string
	}{
		"the latest writer of the template other than Reroll": {
			fields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(0), FieldsV1: template},
				{Manager: "reroll", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(2), FieldsV1: template},
				{Manager: "my-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(1), FieldsV1: template},
			},
			want: "my-operator",
		},
		"writers of other fields and of status do not count": {
			fields: []metav1.ManagedFieldsEntry{
				{Manager: "scaler", Time: at(5), FieldsV1: replicas},
				{Manager: "kube-controller-manager", Subresource: "status", Time: at(6), FieldsV1: template},
				{Manager: "my-operator", Time: at(1), FieldsV1: template},
			},
			want: "my-operator",
		},
		"nobody": {fields: nil, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Manager(tc.fields, "reroll")).To(Equal(tc.want))
		})
	}
}

func TestFingerprint(t *testing.T) {
	g := NewWithT(t)
	a := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"x": "1"}}}
	b := a.DeepCopy()
	g.Expect(Fingerprint(a)).To(Equal(Fingerprint(b)))
	g.Expect(Fingerprint(a)).To(HaveLen(16))
	b.Annotations["x"] = "2"
	g.Expect(Fingerprint(a)).NotTo(Equal(Fingerprint(b)))
}

// TestFingerprint_LongEnvValuesCountByDigestWithoutChangingTheTemplate
// fingerprints a template with a long env value (as the API server holds
// it) and its trimmed form (as the cache keeps it): they are equal, and the
// template given is left as it was.
func TestFingerprint_LongEnvValuesCountByDigestWithoutChangingTheTemplate(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("v", envtrim.MaxValue+1)
	full := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "SHORT", Value: "s"}, {Name: "LONG", Value: long}}}}}}
	trimmed := full.DeepCopy()
	envtrim.Values(&trimmed.Spec)
	g.Expect(trimmed.Spec.Containers[0].Env[1].Value).NotTo(Equal(long), "positive control: the cache's copy is trimmed")
	g.Expect(Fingerprint(full)).To(Equal(Fingerprint(trimmed)))
	g.Expect(full.Spec.Containers[0].Env[1].Value).To(Equal(long), "the template given is not trimmed in place")
	short := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "SHORT", Value: "s"}}}}}}
	g.Expect(Fingerprint(short)).NotTo(Equal(Fingerprint(full)))
}

func TestAnnotations_RoundTrip(t *testing.T) {
	g := NewWithT(t)
	p := Patch{Before: "a", After: "b", At: t0.Add(400 * time.Millisecond)}
	back, err := ParsePatch(p.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*back).To(Equal(Patch{Before: "a", After: "b", At: t0}))
	r := Reverted{Manager: "op", At: t0}
	g.Expect(*ParseReverted(r.String())).To(Equal(r))
	g.Expect(ParseReverted("{")).NotTo(BeNil(), "a damaged record still stops the patching")
	g.Expect(ParseReverted("")).To(BeNil())
}
