package reference

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSourcesOf(t *testing.T) {
	yes := true
	template := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app",
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a"}}},
				{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "p", Optional: &yes}}},
			},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		}},
		InitContainers: []corev1.Container{{
			Name:    "init",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "b", Path: "b"}}}}},
			{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			}}}},
		},
	}}
	cases := map[string]struct {
		kind Kind     // the object's kind
		name string   // the object's name
		want []Source // the places that read it, in spec order
	}{
		"configmap through env, envFrom and an items volume": {kind: ConfigMap, name: "cfg", want: []Source{
			{Via: ViaEnv, Container: "app", Keys: []string{"a"}},
			{Via: ViaEnvFrom, Container: "app"},
			{Via: ViaVolume, Container: "files", Keys: []string{"b"}},
		}},
		"secret of the same name: optional env, init envFrom, projected": {kind: Secret, name: "cfg", want: []Source{
			{Via: ViaEnv, Container: "app", Keys: []string{"p"}, Optional: true},
			{Via: ViaEnvFrom, Container: "init", Init: true},
			{Via: ViaProjected, Container: "all"},
		}},
		"projected configmap without items": {kind: ConfigMap, name: "other", want: []Source{{Via: ViaProjected, Container: "all"}}},
		"not read":                          {kind: Secret, name: "nothing", want: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SourcesOf(template, c.kind, c.name); !reflect.DeepEqual(got, c.want) {
				t.Errorf("SourcesOf(%s/%s) = %+v, want %+v", c.kind, c.name, got, c.want)
			}
		})
	}
}
