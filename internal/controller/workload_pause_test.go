package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestWorkloadReconciler_PausePeriodSurvivesRestart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// Both runs of Reroll read this clock, so the pause period ends when the
	// test says, not when the machine gets round to it. paused-at has
	// second precision.
	t0 := time.Now().UTC().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(t0)
	const period = 4 * time.Second
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", map[string]string{
		"reloader.stakater.com/auto":                    "true",
		"deployment.reloader.stakater.com/pause-period": period.String(),
	}, podSpec(envFrom("cfg")))
	create(t, d)
	first := startReroll(t, ns, Options{Now: clk.Now})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() bool { return get(t, d).Spec.Paused }).Should(gomega.BeTrue())
	g.Expect(get(t, d).Annotations).To(gomega.HaveKeyWithValue("deployment.reloader.stakater.com/paused-at", t0.Format(time.RFC3339)),
		"paused-at is an RFC 3339 UTC time, as Reloader writes it")
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))

	// Reroll stops while the Deployment is paused; a change meanwhile joins
	// the same rollout.
	first.stop(t)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })

	// A second run, one second into the period, writes that change into the
	// paused template (it is live and has reconciled the Deployment) and
	// keeps the pause for the rest of the period.
	clk.SetTime(t0.Add(time.Second))
	startReroll(t, ns, Options{Now: clk.Now})
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
	// Longer than the 3 s left of the period in real time: the requeue at
	// the period's end finds it not over yet on the test's clock.
	g.Consistently(func() bool { return get(t, d).Spec.Paused }, 5*time.Second).Should(gomega.BeTrue(), "a restart keeps the pause until the period ends")
	g.Expect(eventsWithReason(t, ns, "web", ReasonResumed)).To(gomega.BeEmpty())

	// The period ends: the Deployment resumes and rolls both changes at once.
	clk.SetTime(t0.Add(period + time.Second))
	g.Eventually(func() bool { return get(t, d).Spec.Paused }).Should(gomega.BeFalse())
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey("deployment.reloader.stakater.com/paused-at"))
	waitRolledOut(t, d)
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(2), "the two changes made one rollout")
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonResumed) }).Should(gomega.HaveLen(1))
}
