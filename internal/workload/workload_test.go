package workload

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

func TestParseUnstructured(t *testing.T) {
	cases := map[string]struct {
		// in is the --workload value.
		in string
		// want is the parsed kind; wantErr a part of the error instead.
		want    Unstructured
		wantErr string
	}{
		"template path": {
			in:   "apps.kruise.io/v1alpha1/CloneSet:spec.template",
			want: Unstructured{GVK: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}, TemplatePath: []string{"spec", "template"}},
		},
		"annotations path": {
			in:   "example.com/v1/Database:annotations=spec.podAnnotations",
			want: Unstructured{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Database"}, AnnotationsPath: []string{"spec", "podAnnotations"}},
		},
		"core group": {
			in:   "v1/Thing:spec.template",
			want: Unstructured{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Thing"}, TemplatePath: []string{"spec", "template"}},
		},
		"no path":         {in: "example.com/v1/Database", wantErr: "want <group>/<version>/<Kind>:<path>"},
		"too many parts":  {in: "a/b/c/d:spec.template", wantErr: "is not <group>/<version>/<Kind>"},
		"empty path part": {in: "example.com/v1/X:spec..template", wantErr: "has an empty field"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got, err := ParseUnstructured(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(got).To(gomega.Equal(tc.want))
		})
	}
}

func TestUnstructured_SetPodTemplateWritesOnlyChanges(t *testing.T) {
	g := gomega.NewWithT(t)
	k := Unstructured{GVK: schema.GroupVersionKind{Group: "x", Version: "v1", Kind: "W"}, TemplatePath: []string{"spec", "template"}}
	o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "x", "unknownField": "kept"},
		}}},
	}}}
	before := o.DeepCopy()
	tmpl, err := k.PodTemplate(o)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(k.SetPodTemplate(o, tmpl)).To(gomega.Succeed())
	g.Expect(o.Object).To(gomega.Equal(before.Object), "an unchanged template writes nothing")

	tmpl.Annotations = map[string]string{"reroll.dev/config-hash": "h"}
	tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_X_CONFIGMAP", Value: "v"}}
	g.Expect(k.SetPodTemplate(o, tmpl)).To(gomega.Succeed())
	a, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
	g.Expect(a).To(gomega.Equal(map[string]string{"reroll.dev/config-hash": "h"}))
	c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	g.Expect(c[0]).To(gomega.HaveKeyWithValue("unknownField", "kept"))
	g.Expect(c[0]).To(gomega.HaveKeyWithValue("env", []any{map[string]any{"name": "STAKATER_X_CONFIGMAP", "value": "v"}}))
}

func TestJobName(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(JobName("nightly", "0123456789abcdef")).To(gomega.Equal("nightly-reroll-01234567"))
	long := JobName("a-very-long-cronjob-name-that-is-at-the-limit-of-52-c", "0123456789")
	g.Expect(len(long)).To(gomega.BeNumerically("<=", 63))
}

func TestActionOf_RestartAnnotations(t *testing.T) {
	reverted := `{"manager":"my-operator","at":"2026-11-22T12:00:00Z"}`
	cases := map[string]struct {
		// kind is the workload kind; annotations the object's.
		kind        Kind
		annotations map[string]string
		// onDelete sets updateStrategy OnDelete (StatefulSet, DaemonSet).
		onDelete bool
		// want is the way it rolls; why a part of the reason, when set.
		want Way
		why  string
	}{
		"a Deployment rolls by its template":          {kind: Deployment{}, want: ByTemplate},
		"reroll.dev/restart: evict evicts its pods":   {kind: Deployment{}, annotations: map[string]string{"reroll.dev/restart": "evict"}, want: ByEviction},
		"reroll.dev/restart: template is the default": {kind: StatefulSet{}, annotations: map[string]string{"reroll.dev/restart": "template"}, want: ByTemplate},
		"a reverted template is no longer changed": {
			kind: Deployment{}, annotations: map[string]string{"reroll.dev/reverted": reverted},
			want: NotRestarted, why: `Field manager "my-operator" put back the pod template Reroll changed`,
		},
		"eviction wins over a reverted template": {
			kind: Deployment{}, annotations: map[string]string{"reroll.dev/reverted": reverted, "reroll.dev/restart": "evict"}, want: ByEviction,
		},
		"a pod owner always evicts":               {kind: PodOwner{}, want: ByEviction},
		"an OnDelete StatefulSet evicts its pods": {kind: StatefulSet{}, onDelete: true, want: ByEviction},
		"an OnDelete DaemonSet evicts its pods":   {kind: DaemonSet{}, onDelete: true, want: ByEviction},
		"a Job keeps its way":                     {kind: Job{}, annotations: map[string]string{"reroll.dev/restart": "evict"}, want: ByRecreate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			obj := tc.kind.New()
			obj.SetAnnotations(tc.annotations)
			switch o := obj.(type) {
			case *appsv1.StatefulSet:
				if tc.onDelete {
					o.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
				}
			case *appsv1.DaemonSet:
				if tc.onDelete {
					o.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
				}
			}
			a := ActionOf(tc.kind, obj, false)
			g.Expect(a.Way).To(gomega.Equal(tc.want))
			g.Expect(a.Why).To(gomega.ContainSubstring(tc.why))
		})
	}
}

// TestHistoryUnread: versioned config pins only the kinds whose older
// revisions the garbage collection of copies reads.
func TestHistoryUnread(t *testing.T) {
	custom, err := ParseUnstructured("apps.kruise.io/v1alpha1/CloneSet:spec.template")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		kind Kind
		want bool
	}{
		"a Deployment's ReplicaSets are read":                      {Deployment{}, false},
		"a StatefulSet's ControllerRevisions are read":             {StatefulSet{}, false},
		"a DaemonSet's ControllerRevisions are read":               {DaemonSet{}, false},
		"a CronJob's Jobs are read":                                {CronJob{}, false},
		"an Argo Rollout's ReplicaSets are read":                   {ArgoRollout(), false},
		"a DeploymentConfig's ReplicationControllers are not read": {DeploymentConfig(), true},
		"a --workload kind's history is unknown":                   {custom, true},
	} {
		if got := HistoryUnread(c.kind); got != c.want {
			t.Errorf("%s: HistoryUnread = %v, want %v", name, got, c.want)
		}
	}
}

// Issue #36: HighestOrdinalFirst tells a StatefulSet from the other kinds
// in the cache's compact form without decoding it, as it does typed.
func TestHighestOrdinalFirst_CompactNeedsNoDecode(t *testing.T) {
	for _, c := range []struct {
		obj  client.Object
		want bool
	}{
		{&appsv1.StatefulSet{}, true},
		{&appsv1.Deployment{}, false},
		{&appsv1.DaemonSet{}, false},
	} {
		if got := HighestOrdinalFirst(c.obj); got != c.want {
			t.Errorf("%T: %v, want %v", c.obj, got, c.want)
		}
		w, ok := compact.From(c.obj.DeepCopyObject())
		if !ok {
			t.Fatalf("%T: not compacted", c.obj)
		}
		if got := HighestOrdinalFirst(w); got != c.want {
			t.Errorf("compact %T: %v, want %v", c.obj, got, c.want)
		}
		if n := testing.AllocsPerRun(100, func() { HighestOrdinalFirst(w) }); n != 0 {
			t.Errorf("compact %T: %v allocations, a decode", c.obj, n)
		}
	}
	if HighestOrdinalFirst(&batchv1.Job{}) {
		t.Error("a Job")
	}
}
