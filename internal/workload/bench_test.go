package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fanoutDeployment is a Deployment of the fanout bench profile (hack/bench)
// as the cache holds it once Reroll rolled it: opted in, with Reroll's
// record and template patch, and a trigger in its pod template.
func fanoutDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "sh-1"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench-shared", Name: "sh-1", UID: "5b6b4a0e-8d2f-4c51-9a57-6c2f3e0f9d11", ResourceVersion: "4242", Generation: 2,
			Annotations: map[string]string{"reloader.stakater.com/auto": "true",
				"reroll.dev/observed":       `{"ConfigMap/shared":{"CONFIG":"6b86b273ff34fce1","FEATURE_FLAGS":"d4735e3a265e16ee","GREETING":"4e07408562bedb8b"}}`,
				"reroll.dev/observed-key":   "0a1b2c3d",
				"reroll.dev/template-patch": `{"before":"0011223344556677","after":"8899aabbccddeeff","at":"2026-11-27T08:00:00Z"}`}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"reroll.dev/config-hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}}},
			},
		},
	}
}

// BenchmarkMetadataPatch measures the patch of a fanout rollout (the
// record and the pod template's trigger change) and the comparison of the
// reconcile of Reroll's own write, which finds nothing to write.
func BenchmarkMetadataPatch(b *testing.B) {
	b.Run("a rollout", func(b *testing.B) {
		obj := fanoutDeployment()
		desired := obj.DeepCopy()
		desired.Annotations["reroll.dev/observed"] = `{"ConfigMap/shared":{"CONFIG":"6b86b273ff34fce1","FEATURE_FLAGS":"d4735e3a265e16ee","GREETING":"ef2d127de37b942b"}}`
		desired.Spec.Template.Annotations["reroll.dev/config-hash"] = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
		b.ReportAllocs()
		for b.Loop() {
			if _, same, ok := metadataPatch(obj, desired, true); same || !ok {
				b.Fatalf("same %v, ok %v", same, ok)
			}
		}
	})
	b.Run("nothing to write", func(b *testing.B) {
		obj := fanoutDeployment()
		desired := obj.DeepCopy()
		b.ReportAllocs()
		for b.Loop() {
			if _, same, ok := metadataPatch(obj, desired, false); !same || !ok {
				b.Fatalf("same %v, ok %v", same, ok)
			}
		}
	})
}
