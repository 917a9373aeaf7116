package envtrim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kept is a template holding only what Keep keeps.
func kept() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
			Containers: []corev1.Container{{Name: "app",
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
			Volumes:          []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
		},
	}
}

func TestKept_TellsATrimmedTemplateFromAWholeOne(t *testing.T) {
	if !Kept(kept()) {
		t.Fatal("a template of kept fields only is not Kept")
	}
	cases := map[string]func(*corev1.PodTemplateSpec){
		"a label":                 func(t *corev1.PodTemplateSpec) { t.Labels = map[string]string{"app": "x"} },
		"a template name":         func(t *corev1.PodTemplateSpec) { t.Name = "x" },
		"an image":                func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "x" },
		"an init container image": func(t *corev1.PodTemplateSpec) { t.Spec.InitContainers[0].Image = "x" },
		"a probe": func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1}
		},
		"a restart policy":   func(t *corev1.PodTemplateSpec) { t.Spec.RestartPolicy = corev1.RestartPolicyAlways },
		"a service account":  func(t *corev1.PodTemplateSpec) { t.Spec.ServiceAccountName = "x" },
		"a security context": func(t *corev1.PodTemplateSpec) { t.Spec.SecurityContext = &corev1.PodSecurityContext{} },
		"a long env value": func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: strings.Repeat("v", MaxValue+1)}}
		},
		"an ephemeral's image": func(t *corev1.PodTemplateSpec) {
			t.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "x"}}}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			tm := kept()
			change(tm)
			if Kept(tm) {
				t.Error("a template with more than Keep keeps is Kept")
			}
			k := Keep(tm.DeepCopy())
			if !Kept(k) {
				t.Error("Keep's result is not Kept")
			}
			if v := View(tm); !equality.Semantic.DeepEqual(v, k) {
				t.Errorf("View = %+v, Keep = %+v", v, k)
			}
		})
	}
}
