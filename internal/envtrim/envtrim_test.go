package envtrim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestValues(t *testing.T) {
	long := strings.Repeat("v", MaxValue+1)
	other := strings.Repeat("w", MaxValue+1)
	cases := map[string]struct {
		value string // the env var's value
		kept  bool   // whether the cache keeps it as it is
	}{
		"a short value is kept":             {value: "short", kept: true},
		"a value at the bound is kept":      {value: strings.Repeat("v", MaxValue), kept: true},
		"a trigger's value is kept":         {value: "0123456789abcdef0123456789abcdef01234567", kept: true},
		"a value over the bound is trimmed": {value: long},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			spec := corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "A", Value: c.value}}}},
				Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
					{Name: "A", Value: c.value},
					{Name: "REF", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}},
				}}},
			}
			Values(&spec)
			for _, got := range []string{spec.InitContainers[0].Env[0].Value, spec.Containers[0].Env[0].Value} {
				switch {
				case c.kept && got != c.value:
					t.Errorf("value trimmed to %q, want it kept", got)
				case !c.kept && (!strings.HasPrefix(got, Prefix) || len(got) != len(Prefix)+64):
					t.Errorf("value kept as %d bytes, want %s and a SHA-256", len(got), Prefix)
				}
			}
			if ref := spec.Containers[0].Env[1]; ref.ValueFrom == nil || ref.ValueFrom.ConfigMapKeyRef.Name != "cfg" {
				t.Errorf("a reference was changed: %+v", ref)
			}
		})
	}
	// Two different long values stay apart.
	a := corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Value: long}}}}}
	b := corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Value: other}}}}}
	Values(&a)
	Values(&b)
	if a.Containers[0].Env[0].Value == b.Containers[0].Env[0].Value {
		t.Error("two different values were trimmed to the same")
	}
}
