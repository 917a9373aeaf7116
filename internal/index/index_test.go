package index

import (
	"math/rand"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/workload"
)

// Issue #36: the cache holds the three kinds in compact form, whose pod
// template the reference index reads without decoding the rest
// (compact.PodTemplate). Its values must be those of the typed object, for
// random objects of each kind (apimachinery's fuzzer) opted in with each
// dialect.
func TestReferencesOf_CompactGivesTheTypedValues(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(36), serializer.NewCodecFactory(runtime.NewScheme()))
	cfg := annotation.DefaultConfig()
	kinds := []struct {
		kind workload.Kind
		new  func() client.Object
	}{
		{workload.Deployment{}, func() client.Object { return &appsv1.Deployment{} }},
		{workload.StatefulSet{}, func() client.Object { return &appsv1.StatefulSet{} }},
		{workload.DaemonSet{}, func() client.Object { return &appsv1.DaemonSet{} }},
	}
	optIns := []map[string]string{
		{"reloader.stakater.com/auto": "true"},
		{"reroll.dev/auto": "true"},
		{annotation.WaveUpdate: "true", annotation.WaveExtraConfigMaps: "cfg,other/cfg"},
		{annotation.PodReloaderConfigMaps: "a,b", annotation.PodReloaderSecrets: "s"},
		{"configmap.reloader.stakater.com/reload": "one,two"},
	}
	for _, k := range kinds {
		indexed := 0
		for i := range 300 {
			obj := k.new()
			f.Fill(obj)
			obj.SetAnnotations(optIns[i%len(optIns)])
			for _, allow := range []bool{false, true} {
				want := ReferencesOf(k.kind, cfg, allow, obj)
				w, ok := compact.From(obj.DeepCopyObject())
				if !ok {
					t.Fatalf("%s %d: not compacted", k.kind.Name(), i)
				}
				if got := ReferencesOf(k.kind, cfg, allow, w); !slices.Equal(got, want) {
					t.Fatalf("%s %d: the compact form gives %q, the typed %q", k.kind.Name(), i, got, want)
				}
				if len(want) > 0 && hasTemplateReference(want) {
					indexed++
				}
			}
		}
		if indexed == 0 {
			t.Errorf("%s: no random object referred to a ConfigMap or Secret from its template", k.kind.Name())
		}
	}
}

// hasTemplateReference reports whether values hold one that names a
// ConfigMap or Secret other than the fixed lists' (a, b, s, cfg, one,
// two): one found in the random pod template.
func hasTemplateReference(values []string) bool {
	for _, v := range values {
		switch v {
		case "ConfigMap/a", "ConfigMap/b", "Secret/s", "ConfigMap/cfg", "ConfigMap/one", "ConfigMap/two",
			"written:ConfigMap/a", "written:ConfigMap/b", "written:Secret/s", "ConfigMap/other/cfg":
			continue
		}
		return true
	}
	return false
}

// The compact form's index values are read from its template alone: a
// fixture of each kind gives the same values typed and compact, and they
// are the ones its template names.
func TestReferencesOf_FixturesOfEachKind(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}}}}}
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	for _, c := range []struct {
		kind workload.Kind
		obj  client.Object
	}{
		{workload.Deployment{}, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: tmpl}}},
		{workload.StatefulSet{}, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: tmpl}}},
		{workload.DaemonSet{}, &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: tmpl}}},
	} {
		c.obj.SetNamespace("ns")
		c.obj.SetName("w")
		c.obj.SetAnnotations(auto)
		want := []string{"ConfigMap/cfg", "Secret/sec"}
		if got := ReferencesOf(c.kind, annotation.DefaultConfig(), false, c.obj); !slices.Equal(got, want) {
			t.Fatalf("%s typed: %q", c.kind.Name(), got)
		}
		w, _ := compact.From(c.obj.DeepCopyObject())
		if got := ReferencesOf(c.kind, annotation.DefaultConfig(), false, w); !slices.Equal(got, want) {
			t.Errorf("%s compact: %q, want %q", c.kind.Name(), got, want)
		}
	}
}

// BenchmarkReferencesOf_Update measures the reference index's part of one
// update of a cached Deployment (a fixture like the fan-out bench
// profile's, opted in, one ConfigMap): client-go's indexer computes the
// values of the copy the update replaces, then the new copy's. computed:
// each computed from the compact template (as before issue #36's change);
// kept: through compact.Indexed, which keeps the values with each copy, so
// that the replaced copy's cost nothing. Each iteration also makes the new
// copy (compact.From, about 1.6 µs), the same in both.
func BenchmarkReferencesOf_Update(b *testing.B) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sh-0001"}, Annotations: map[string]string{"reroll.dev/config-hash": "0123456789abcdef"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}}}}}}
	d.SetNamespace("bench-shared")
	d.SetName("sh-0001")
	d.SetAnnotations(map[string]string{"reloader.stakater.com/auto": "true"})
	cfg := annotation.DefaultConfig()
	values := func(obj client.Object) []string { return ReferencesOf(workload.Deployment{}, cfg, false, obj) }
	for _, how := range []string{"computed", "kept"} {
		b.Run(how, func(b *testing.B) {
			index := values
			if how == "kept" {
				index = func(obj client.Object) []string { return compact.Indexed(obj, values) }
			}
			replaced, _ := compact.From(d.DeepCopy())
			index(replaced)
			b.ReportAllocs()
			for b.Loop() {
				added, _ := compact.From(d.DeepCopy())
				index(replaced)
				index(added)
				replaced = added
			}
		})
	}
}
