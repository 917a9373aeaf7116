package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// TestWorkloadReconciler_BurstAcrossObjectsRollsOnce: a workload's two
// ConfigMaps and its Secret are written one after another; the changes are
// held back and one rollout answers all three. The window is far longer
// than the three writes take on a loaded machine, so nothing here depends
// on timing; that a later change restarts the window, and max-wait, are
// checked with a fake clock in TestDebouncer.
func TestWorkloadReconciler_BurstAcrossObjectsRollsOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{CoalesceWindow: 20 * time.Second, CoalesceMaxWait: 10 * time.Minute})
	create(t, configMap(ns, "cfg", map[string]string{"k": "0"}))
	create(t, secret(ns, "creds", map[string]string{"k": "0"}))
	create(t, configMap(ns, "more", map[string]string{"k": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg"), envFromSource("Secret", "creds"), envFromSource("ConfigMap", "more")}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })
	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["k"] = []byte("1") })
	update(t, configMap(ns, "more", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })

	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	note := rolledEvents(t, ns, "web")[0]
	for _, id := range []string{"ConfigMap/cfg", "Secret/creds", "ConfigMap/more"} {
		g.Expect(note).To(gomega.ContainSubstring(id + " changed keys k"))
	}
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey("reroll.dev/config-hash"))
}
