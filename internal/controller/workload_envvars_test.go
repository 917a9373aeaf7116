package controller

import (
	"crypto/sha1" //nolint:gosec // Reloader's hash, recomputed here independently.
	"encoding/hex"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/plan"
)

// reloaderSHA1 is Reloader's hash of a ConfigMap with only data entries,
// computed here from its definition rather than with package digest.
func reloaderSHA1(joined string) string {
	sum := sha1.Sum([]byte(joined)) //nolint:gosec // see import
	return hex.EncodeToString(sum[:])
}

func TestWorkloadReconciler_EnvVarsAdoptsReloaderWorkloadWithoutRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "foo", map[string]string{"b": "2", "a": "1"}))
	// What Reloader left behind after its last rollout of this Deployment.
	d := deployment(ns, "web", reloaderAutoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers = append(s.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/sidecar:1"})
		s.Containers[1].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}}}}
		s.Containers[1].Env = []corev1.EnvVar{{Name: "STAKATER_FOO_CONFIGMAP", Value: reloaderSHA1("a=1;b=2")}}
	}))
	create(t, d)
	waitFirstReplicaSet(t, d)

	startReroll(t, ns, Options{PlanOptions: plan.Options{Strategy: "env-vars"}})
	recorded(t, d)
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty())
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(1))

	update(t, configMap(ns, "foo", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "3" })
	g.Eventually(func() []corev1.EnvVar { return get(t, d).Spec.Template.Spec.Containers[1].Env }).Should(
		gomega.Equal([]corev1.EnvVar{{Name: "STAKATER_FOO_CONFIGMAP", Value: reloaderSHA1("a=1;b=3")}}))
	g.Expect(get(t, d).Spec.Template.Spec.Containers[0].Env).To(gomega.BeEmpty(), "the env var goes on the container that reads the ConfigMap")
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.BeEmpty(), "env-vars writes no annotation on the pod template")
	g.Eventually(func() int { return len(replicaSets(t, ns, "web")) }).Should(gomega.Equal(2))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}
