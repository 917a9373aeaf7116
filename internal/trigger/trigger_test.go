package trigger

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/reference"
)

func TestEnvVarName(t *testing.T) {
	cases := map[string]struct {
		// kind and name identify the object.
		kind reference.Kind
		name string
		// want is Reloader's variable name for it.
		want string
	}{
		"plain":                       {kind: reference.ConfigMap, name: "foo", want: "STAKATER_FOO_CONFIGMAP"},
		"dashes and dots":             {kind: reference.ConfigMap, name: "my.app-config", want: "STAKATER_MY_APP_CONFIG_CONFIGMAP"},
		"runs collapse to one":        {kind: reference.Secret, name: "a.-.b", want: "STAKATER_A_B_SECRET"},
		"digits kept":                 {kind: reference.Secret, name: "db-2", want: "STAKATER_DB_2_SECRET"},
		"no leading underscore":       {kind: reference.ConfigMap, name: "-x", want: "STAKATER_X_CONFIGMAP"},
		"trailing separator survives": {kind: reference.ConfigMap, name: "x.", want: "STAKATER_X__CONFIGMAP"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(EnvVarName(tc.kind, tc.name)).To(gomega.Equal(tc.want))
		})
	}
}

func TestEnvVarContainer(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "first"}, {Name: "second"}},
	}}
	cases := map[string]struct {
		// readers are the containers that read the object, as reference
		// extraction orders them.
		readers []string
		// want is the name of the container that gets the env var.
		want string
	}{
		"first regular reader":         {readers: []string{"second"}, want: "second"},
		"regular before init":          {readers: []string{"second", "init"}, want: "second"},
		"only an init container reads": {readers: []string{"init"}, want: "first"},
		"listed by name only":          {readers: nil, want: "first"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := EnvVarContainer(tmpl, reference.Reference{Kind: reference.ConfigMap, Name: "x", Containers: tc.readers})
			gomega.NewWithT(t).Expect(c.Name).To(gomega.Equal(tc.want))
		})
	}
	gomega.NewWithT(t).Expect(EnvVarContainer(&corev1.PodTemplateSpec{}, reference.Reference{})).To(gomega.BeNil())
}

func TestSetEnvAndConfigHash(t *testing.T) {
	g := gomega.NewWithT(t)
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "KEEP", Value: "1"}}}
	g.Expect(SetEnv(c, "STAKATER_X_CONFIGMAP", "abc")).To(gomega.BeTrue())
	g.Expect(SetEnv(c, "STAKATER_X_CONFIGMAP", "abc")).To(gomega.BeFalse())
	g.Expect(SetEnv(c, "STAKATER_X_CONFIGMAP", "def")).To(gomega.BeTrue())
	g.Expect(c.Env).To(gomega.Equal([]corev1.EnvVar{{Name: "KEEP", Value: "1"}, {Name: "STAKATER_X_CONFIGMAP", Value: "def"}}))

	tmpl := &corev1.PodTemplateSpec{}
	g.Expect(SetConfigHash(tmpl, "h1")).To(gomega.BeTrue())
	g.Expect(SetConfigHash(tmpl, "h1")).To(gomega.BeFalse())
	g.Expect(tmpl.Annotations).To(gomega.HaveKeyWithValue(ConfigHashAnnotation, "h1"))

	_, err := ParseStrategy("rolling")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`"annotations"`)))
	s, err := ParseStrategy("env-vars")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(s).To(gomega.Equal(EnvVars))
}

func TestSetLastReloadedFrom(t *testing.T) {
	g := gomega.NewWithT(t)
	tmpl := &corev1.PodTemplateSpec{}
	rec := ReloadedFrom{Type: "CONFIGMAP", Name: "cfg", Namespace: "ns", Hash: "abc", ContainerRefs: []string{"app"}, ObservedAt: 100}
	g.Expect(SetLastReloadedFrom(tmpl, rec)).To(gomega.BeTrue())
	g.Expect(tmpl.Annotations[LastReloadedFromAnnotation]).To(gomega.MatchJSON(
		`{"type":"CONFIGMAP","name":"cfg","namespace":"ns","hash":"abc","containerRefs":["app"],"observedAt":100}`))
	rec.ObservedAt = 200
	g.Expect(SetLastReloadedFrom(tmpl, rec)).To(gomega.BeFalse(), "only the time differs")
	rec.Hash = "def"
	g.Expect(SetLastReloadedFrom(tmpl, rec)).To(gomega.BeTrue())
}
