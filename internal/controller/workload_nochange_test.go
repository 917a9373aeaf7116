package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_IgnoresLabelOnlyChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), secret(ns, "tls", map[string]string{"tls.crt": "x"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		s.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
	}))
	create(t, d)
	// A Deployment's generation counts changes to its spec and annotations,
	// so any write by Reroll raises it; status updates by the Deployment
	// controller do not.
	before := recorded(t, d).Generation

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{"team": "blue"}
		cm.Annotations = map[string]string{"note": "metadata only"}
	})
	update(t, secret(ns, "tls", nil), func(s *corev1.Secret) { s.Labels = map[string]string{"rotated-by": "nobody"} })

	// Not a single write to the workload.
	g.Consistently(func() int64 { return get(t, d).Generation }).Should(gomega.Equal(before))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	// Reroll is alive: a data change right after does roll.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadReconciler_IgnoresChangeOfUnconsumedKey(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"used": "1", "unused": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "USED", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "used"}}}}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) {
		cm.Data["unused"] = "2"
		cm.Data["brand-new"] = "x"
	})
	g.Consistently(func() map[string]string { return get(t, d).Spec.Template.Annotations }).ShouldNot(gomega.HaveKey(trigger.ConfigHashAnnotation))

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["used"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys used")))
}

func TestWorkloadReconciler_IgnoresWorkloadsThatDidNotOptIn(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "plain", map[string]string{"reroll.dev/auto": "false"}, podSpec(envFrom("cfg")))
	// Positive control: an opted-in Deployment reading the same ConfigMap.
	on := deployment(ns, "on", autoOn, podSpec(envFrom("cfg")))
	create(t, d, on)
	recorded(t, on)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// The change was seen and acted on...
	g.Eventually(func() []string { return rolledEvents(t, ns, "on") }).Should(gomega.HaveLen(1))
	// ...and the Deployment that did not opt in was neither recorded nor
	// rolled.
	g.Consistently(func() *corev1.PodTemplateSpec { return &get(t, d).Spec.Template }).Should(gomega.HaveField("Annotations", gomega.BeEmpty()))
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	g.Expect(rolledEvents(t, ns, "plain")).To(gomega.BeEmpty())
}
