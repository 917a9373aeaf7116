package compact

import (
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// templateOf returns the template of obj, a typed Deployment, StatefulSet
// or DaemonSet.
func templateOf(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// Issue #36: PodTemplate decodes the template alone, from where each
// kind's encoding holds it, and gives what Expand's object holds, for
// random objects of each kind (apimachinery's fuzzer, as its round-trip
// tests use it) and the fixtures of TestFrom_ExpandGivesBackTheObject.
func TestPodTemplate_GivesExpandsTemplate(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(36), serializer.NewCodecFactory(runtime.NewScheme()))
	kinds := map[string]func() client.Object{
		"Deployment":  func() client.Object { return &appsv1.Deployment{} },
		"StatefulSet": func() client.Object { return &appsv1.StatefulSet{} },
		"DaemonSet":   func() client.Object { return &appsv1.DaemonSet{} },
	}
	for name, newObj := range kinds {
		withContainers := 0
		for i := range 300 {
			obj := newObj()
			f.Fill(obj)
			want := templateOf(obj).DeepCopy()
			w, ok := From(obj)
			if !ok {
				t.Fatalf("%s %d: not compacted", name, i)
			}
			got, ok := PodTemplate(w)
			if !ok {
				t.Fatalf("%s %d: no template", name, i)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("%s %d: PodTemplate gives\n%+v\nwant\n%+v", name, i, got, want)
			}
			if !equality.Semantic.DeepEqual(got, templateOf(Expand(w))) {
				t.Fatalf("%s %d: PodTemplate differs from Expand's", name, i)
			}
			if len(got.Spec.Containers) > 0 {
				withContainers++
			}
			// The caller's copy: changing it changes nothing held.
			got.Labels = map[string]string{"changed": "yes"}
			if again, _ := PodTemplate(w); !equality.Semantic.DeepEqual(again, want) {
				t.Fatalf("%s %d: changing a template changed the compact form", name, i)
			}
		}
		if withContainers == 0 {
			t.Errorf("%s: no random template had a container", name)
		}
		if KindOf(newObj()) != "" {
			t.Errorf("%s: KindOf of a typed object", name)
		}
	}
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Template: template}},
		&appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Template: template}},
		&appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{Template: template}},
	} {
		w, _ := From(obj.DeepCopyObject())
		if got, _ := PodTemplate(w); !equality.Semantic.DeepEqual(got, &template) {
			t.Errorf("%T: PodTemplate gives %+v", obj, got)
		}
	}
}

func TestKindOf(t *testing.T) {
	for want, obj := range map[string]client.Object{"Deployment": &appsv1.Deployment{}, "StatefulSet": &appsv1.StatefulSet{}, "DaemonSet": &appsv1.DaemonSet{}} {
		w, _ := From(obj)
		if got := KindOf(w); got != want {
			t.Errorf("KindOf gives %q, want %q", got, want)
		}
		if got := w.DeepCopyObject(); got == nil || got.(client.Object) == nil {
			t.Fatal("no decode")
		}
	}
	if KindOf(&batchv1.Job{}) != "" {
		t.Error("KindOf of a Job")
	}
	if _, ok := PodTemplate(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: template}}); ok {
		t.Error("PodTemplate of a typed Deployment")
	}
}

// BenchmarkPodTemplate compares reading a compact Deployment's template
// by Expand (what the kinds' PodTemplate did) and by PodTemplate.
func BenchmarkPodTemplate(b *testing.B) {
	d := &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Template: template},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}
	w, _ := From(d)
	b.Run("Expand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = templateOf(Expand(w))
		}
	})
	b.Run("PodTemplate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = PodTemplate(w)
		}
	})
}
