package revert

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fanoutTemplate is the pod template of a Deployment of the fanout bench
// profile (hack/bench) as the API server returns it, defaults set: what
// the cache's transform computes the Sums of on every event of it.
func fanoutTemplate() *corev1.PodTemplateSpec {
	grace := int64(30)
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sh-1"},
			Annotations: map[string]string{"reroll.dev/config-hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}},
				Env: []corev1.EnvVar{{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "s-1"}, Key: "token"}}}},
				Resources:                corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName,
		},
	}
}

// BenchmarkSumsOf_Fanout measures the Sums of one fanout template, which the
// cache's transform computes on each event of a Deployment (2,050 at
// start, one more per patch of the fan-out).
func BenchmarkSumsOf_Fanout(b *testing.B) {
	t := fanoutTemplate()
	b.ReportAllocs()
	for b.Loop() {
		if SumsOf(t).Rest == "" {
			b.Fatal("empty")
		}
	}
}
