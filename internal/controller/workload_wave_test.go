package controller

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/trigger"
)

// waveHash recomputes Wave's hash from its definition, independently of
// package digest: the JSON {"configMaps":{...},"secrets":{...}} with sorted
// keys and base64 values, written out by hand here; SHA-256, hex.
func waveHash(cfgA, cfgB, password, sharedX string) string {
	b := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	doc := fmt.Sprintf(`{"configMaps":{"cfg":{"a":%q,"b":%q},"shared":{"x":%q}},"secrets":{"db":{"password":%q}}}`,
		b(cfgA), b(cfgB), b(sharedX), b(password))
	sum := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(sum[:])
}

func TestWorkloadReconciler_WaveDialect(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, other := newNamespace(t), newNamespace(t)
	create(t,
		configMap(ns, "cfg", map[string]string{"a": "1", "b": "1"}),
		configMap(ns, "init-only", map[string]string{"k": "1"}),
		secret(ns, "db", map[string]string{"password": "p1", "user": "u1"}),
		configMap(other, "shared", map[string]string{"x": "1"}),
	)
	spec := podSpec(func(s *corev1.PodSpec) {
		// Wave hashes every key of a volume's object, whatever items says.
		s.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}},
		}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
		s.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password",
		}}}}
		// Wave does not read init containers.
		s.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1", EnvFrom: []corev1.EnvFromSource{{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-only"}},
		}}}}
	})
	annotations := map[string]string{
		"wave.pusher.com/update-on-config-change": "true",
		"wave.pusher.com/extra-configmaps":        other + "/shared",
	}
	// A Deployment Wave already rolled: its hash is current.
	switched := deployment(ns, "switched", annotations, spec)
	switched.Spec.Template.Annotations = map[string]string{trigger.WaveHashAnnotation: waveHash("1", "1", "p1", "1")}
	// Wave waits while a required reference is missing.
	waiting := deployment(ns, "waiting", map[string]string{"wave.pusher.com/update-on-config-change": "true"}, podSpec(envFrom("cfg", "not-yet")))
	create(t, switched, waiting)
	waitFirstReplicaSet(t, switched)

	// Wave's cross-namespace lists need the opt-in.
	startReroll(t, ns, Options{Scope: scope.Scope{Namespaces: []string{ns, other}}, PlanOptions: plan.Options{AllowCrossNamespaceReferences: true}})
	recorded(t, switched)
	g.Consistently(func() []string { return rolledEvents(t, ns, "switched") }).Should(gomega.BeEmpty())
	g.Expect(replicaSets(t, ns, "switched")).To(gomega.HaveLen(1), "switching from Wave rolls nothing")

	update(t, configMap(ns, "init-only", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "2" })
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Eventually(func() map[string]string { return get(t, switched).Spec.Template.Annotations }).Should(
		gomega.HaveKeyWithValue(trigger.WaveHashAnnotation, waveHash("1", "2", "p1", "1")))

	// An extra object in another namespace counts too.
	update(t, configMap(other, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["x"] = "2" })
	g.Eventually(func() map[string]string { return get(t, switched).Spec.Template.Annotations }).Should(
		gomega.HaveKeyWithValue(trigger.WaveHashAnnotation, waveHash("1", "2", "p1", "2")))
	g.Eventually(func() []string { return rolledEvents(t, ns, "switched") }).Should(gomega.HaveLen(2))
	for _, note := range rolledEvents(t, ns, "switched") {
		g.Expect(note).NotTo(gomega.ContainSubstring("init-only"))
	}

	g.Consistently(func() map[string]string { return get(t, waiting).Annotations }).ShouldNot(gomega.HaveKey(ObservedAnnotation))
	g.Expect(get(t, waiting).Spec.Template.Annotations).To(gomega.BeEmpty())
}

func TestWorkloadReconciler_CrossNamespaceReferenceRefused(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, other := newNamespace(t), newNamespace(t)
	create(t, secret(other, "payments-db", map[string]string{"password": "p1"}), configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "tenant", map[string]string{
		"wave.pusher.com/update-on-config-change": "true",
		"wave.pusher.com/extra-secrets":           other + "/payments-db",
	}, podSpec(envFrom("cfg")))
	create(t, d)
	waitFirstReplicaSet(t, d)
	// Reroll watches both namespaces: only the boundary keeps the Secret out.
	startReroll(t, ns, Options{Scope: scope.Scope{Namespaces: []string{ns, other}}})

	recorded(t, d)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "tenant", plan.ReasonCrossNamespaceReference) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("Secret " + other + "/payments-db")))
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).To(gomega.ContainSubstring("ConfigMap/cfg"), "the rest still applies")
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.ContainSubstring("payments-db"))

	update(t, secret(other, "payments-db", nil), func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	g.Consistently(func() []string { return rolledEvents(t, ns, "tenant") }).Should(gomega.BeEmpty())
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.ContainSubstring("payments-db"))
	g.Expect(replicaSets(t, ns, "tenant")).To(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "tenant", plan.ReasonCrossNamespaceReference)).To(gomega.HaveLen(1))

	// Positive check: its own data still rolls it.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "tenant") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.ContainSubstring("payments-db"))
}

// TestWorkloadReconciler_WaveHashLeavesIgnoredSecretsOut: the security
// review found Wave's hash reading Secrets despite
// --resources-to-ignore=secrets. With Secrets ignored, a Wave workload that
// reads a ConfigMap and a Secret rolls for the ConfigMap with a hash over
// the ConfigMap alone, and a change of the Secret rolls nothing.
func TestWorkloadReconciler_WaveHashLeavesIgnoredSecretsOut(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), secret(ns, "db", map[string]string{"password": "p1"}))
	d := deployment(ns, "web", map[string]string{"wave.pusher.com/update-on-config-change": "true"}, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password",
		}}}}
	}))
	create(t, d)
	opts := Options{PlanOptions: plan.Options{Annotations: annotation.DefaultConfig()}}
	opts.Annotations.IgnoreSecrets = true
	startReroll(t, ns, opts)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// printf '{"configMaps":{"cfg":{"a":"Mg=="}},"secrets":{}}' | sha256sum
	g.Eventually(func() map[string]string { return get(t, d).Spec.Template.Annotations }).Should(
		gomega.HaveKeyWithValue(trigger.WaveHashAnnotation, "3ab5a7e76e99c3ea2adc1f734733716a29f3d1a81d195cb7657fd10c90029763"))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))

	// The rollout above is the positive control.
	update(t, secret(ns, "db", nil), func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}
