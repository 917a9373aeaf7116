package pin

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestReferenced(t *testing.T) {
	cmKey := func(name string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}
	}
	secretKey := func(name string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}
	}
	cases := map[string]struct {
		// spec is the pod spec read.
		spec *corev1.PodSpec
		// configMaps and secrets are the names expected.
		configMaps, secrets []string
	}{
		"nil names nothing": {},
		"env valueFrom of a container": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: cmKey("cm")}, {Name: "B", ValueFrom: secretKey("s")}, {Name: "C", Value: "plain"},
			}}}},
			configMaps: []string{"cm"}, secrets: []string{"s"},
		},
		"envFrom of init and ephemeral containers": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-cm"}}}}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-s"}}}},
				}}},
			},
			configMaps: []string{"init-cm"}, secrets: []string{"debug-s"},
		},
		"volumes and projected sources, sorted and once each": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("b")}}}},
				Volumes: []corev1.Volume{
					{Name: "1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}}},
					{Name: "2", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "t"}}},
					{Name: "3", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
						{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "t"}}},
					}}}},
					{Name: "4", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
			},
			configMaps: []string{"a", "b"}, secrets: []string{"t"},
		},
		"image pull secrets are not named": {
			spec: &corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			cms, secrets := Referenced(tc.spec)
			g.Expect(cms).To(gomega.Equal(tc.configMaps))
			g.Expect(secrets).To(gomega.Equal(tc.secrets))
		})
	}
}
