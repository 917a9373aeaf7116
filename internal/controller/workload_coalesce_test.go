package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// TestWorkloadReconciler_BurstLongerThanWindowRollsOnce: a workload's
// ConfigMap and Secret are written further apart than a fixed window would
// hold, but each within the window of the one before: one rollout.
func TestWorkloadReconciler_BurstLongerThanWindowRollsOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{CoalesceWindow: 5 * time.Second, CoalesceMaxWait: time.Minute})
	create(t, configMap(ns, "cfg", map[string]string{"k": "0"}))
	create(t, secret(ns, "creds", map[string]string{"k": "0"}))
	create(t, configMap(ns, "more", map[string]string{"k": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg"), envFromSource("Secret", "creds"), envFromSource("ConfigMap", "more")}
	}))
	create(t, d)
	recorded(t, d)

	// Each write comes 3 s or more after the one before: 6 s or more in
	// all, longer than the 5 s window that a window fixed at the first
	// change would close after, but never 5 s quiet.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }, 3*time.Second).Should(gomega.BeEmpty())
	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["k"] = []byte("1") })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }, 3*time.Second).Should(gomega.BeEmpty())
	update(t, configMap(ns, "more", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })

	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }, time.Minute).Should(gomega.HaveLen(1))
	note := rolledEvents(t, ns, "web")[0]
	for _, id := range []string{"ConfigMap/cfg", "Secret/creds", "ConfigMap/more"} {
		g.Expect(note).To(gomega.ContainSubstring(id + " changed keys k"))
	}
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }, 6*time.Second).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey("reroll.dev/config-hash"))
}
