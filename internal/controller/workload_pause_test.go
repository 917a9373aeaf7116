package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestWorkloadReconciler_PausePeriodSurvivesRestart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", map[string]string{
		"reloader.stakater.com/auto":                    "true",
		"deployment.reloader.stakater.com/pause-period": "4s",
	}, podSpec(envFrom("cfg")))
	create(t, d)
	first := startReroll(t, ns, Options{})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() bool { return get(t, d).Spec.Paused }).Should(gomega.BeTrue())
	pausedAt, err := time.Parse(time.RFC3339, get(t, d).Annotations["deployment.reloader.stakater.com/paused-at"])
	g.Expect(err).NotTo(gomega.HaveOccurred(), "paused-at is an RFC 3339 time, as Reloader writes it")
	g.Expect(pausedAt.Location()).To(gomega.Equal(time.UTC))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))

	// Reroll stops while the Deployment is paused; the pause outlives it.
	first.stop(t)
	g.Consistently(func() bool { return get(t, d).Spec.Paused }, 2*time.Second).Should(gomega.BeTrue())
	// A change during the pause joins the same rollout.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })

	startReroll(t, ns, Options{})
	g.Eventually(func() bool { return get(t, d).Spec.Paused }).Should(gomega.BeFalse())
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey("deployment.reloader.stakater.com/paused-at"))
	g.Expect(time.Since(pausedAt)).To(gomega.BeNumerically(">=", 3*time.Second), "resumed only after the period (paused-at has second precision)")
	waitRolledOut(t, d)
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(2), "the two changes made one rollout")
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonResumed) }).Should(gomega.HaveLen(1))
}
