package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_EnvFromRollsWhenKeyAddedOrRemoved(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "new" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys b")))
	afterAdd := get(t, d).Spec.Template.Annotations[trigger.ConfigHashAnnotation]
	g.Expect(afterAdd).NotTo(gomega.BeEmpty())

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { delete(cm.Data, "a") })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
	g.Expect(get(t, d).Spec.Template.Annotations[trigger.ConfigHashAnnotation]).NotTo(gomega.Equal(afterAdd))
}

func TestWorkloadReconciler_RollsOnInitContainerAndProjectedVolumeReferences(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t,
		configMap(ns, "migrations", map[string]string{"url": "postgres://one"}),
		secret(ns, "bundle", map[string]string{"ca.crt": "one"}),
	)
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "migrate", Image: "registry.example/migrate:1", Env: []corev1.EnvVar{{
			Name: "URL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "migrations"}, Key: "url"}},
		}}}}
		s.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle"}}},
		}}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "migrations", nil), func(cm *corev1.ConfigMap) { cm.Data["url"] = "postgres://two" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/migrations changed keys url")))

	update(t, secret(ns, "bundle", nil), func(s *corev1.Secret) { s.Data["ca.crt"] = []byte("two") })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("Secret/bundle changed keys ca.crt")))
}

func TestWorkloadReconciler_ExplicitListRollsWithoutReference(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t,
		configMap(ns, "listed", map[string]string{"feature": "off"}),
		configMap(ns, "referenced-not-listed", map[string]string{"a": "1"}),
		secret(ns, "listed-secret", map[string]string{"token": "one"}),
	)
	d := deployment(ns, "web", map[string]string{
		"configmap.reloader.stakater.com/reload": "listed",
		"reroll.dev/secrets":                     "listed-secret",
	}, podSpec(envFrom("referenced-not-listed")))
	create(t, d)
	recorded(t, d)

	// Without auto, only the listed objects count.
	update(t, configMap(ns, "referenced-not-listed", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty())

	update(t, configMap(ns, "listed", nil), func(cm *corev1.ConfigMap) { cm.Data["feature"] = "on" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/listed changed keys feature")))

	update(t, secret(ns, "listed-secret", nil), func(s *corev1.Secret) { s.Data["token"] = []byte("two") })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("Secret/listed-secret changed keys token")))
}
