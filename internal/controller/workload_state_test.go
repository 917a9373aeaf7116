package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// A tenant who can edit Deployments in one namespace writes Reroll's state
// by hand on workloads that never opted in: a rolled-at in the future (a
// rollout "running" for good) and a pending change from long ago (first in
// the queue for good). Under a cluster-wide bound of 1 this used to hold
// every other namespace's rollouts. Forged state must count for nothing,
// be removed with a Warning Event, and another namespace's change must roll.
func TestWorkloadReconciler_ForgedStateHoldsNoRollout(t *testing.T) {
	g := newT(t)
	tenant, victim := newNamespace(t), newNamespace(t)
	// Never Ready: the forged "rollout" never completes by itself.
	stuck := func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"example.com/none": "true"} }
	running := deployment(tenant, "running", nil, podSpec(stuck))
	running.Annotations = map[string]string{plan.RolledAtAnnotation: "2099-01-01T00:00:00Z"}
	queued := deployment(tenant, "queued", nil, podSpec(stuck))
	queued.Annotations = map[string]string{plan.PendingAnnotation: "2000-01-01T00:00:00Z max-concurrent-rollouts"}
	create(t, running, queued)
	create(t, configMap(victim, "cfg", map[string]string{"a": "1"}))
	web := deployment(victim, "web", autoOn, podSpec(envFrom("cfg")))
	api := deployment(victim, "api", autoOn, podSpec(envFrom("cfg")))
	create(t, web, api)

	startReroll(t, victim, Options{PlanOptions: plan.Options{Key: testKey(t, 9), MaxConcurrentRollouts: 1, Recheck: time.Second},
		Scope: scope.Scope{Namespaces: []string{tenant, victim}}})
	for _, d := range []*appsv1.Deployment{web, api} {
		recorded(t, d)
		waitRolledOut(t, d)
	}

	// Each forged annotation is reported and removed.
	for _, d := range []*appsv1.Deployment{running, queued} {
		g.Eventually(func() []string { return eventsWithReason(t, tenant, d.Name, plan.ReasonForgedState) }).
			Should(gomega.ContainElement(gomega.ContainSubstring("Reroll did not write it")), "a Warning on %s", d.Name)
		g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.And(
			gomega.Not(gomega.HaveKey(plan.RolledAtAnnotation)), gomega.Not(gomega.HaveKey(plan.PendingAnnotation))))
	}
	// Written again after the clean-up, and at once a change in the other
	// namespace: the forged state still holds nothing.
	update(t, running, func(d *appsv1.Deployment) { d.Annotations[plan.RolledAtAnnotation] = "2099-01-01T00:00:00Z" })
	// Paused by the user: the victim's first rollout runs until resumed.
	for _, d := range []*appsv1.Deployment{web, api} {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	update(t, configMap(victim, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	rolled := func() int { return len(rolledEvents(t, victim, "web")) + len(rolledEvents(t, victim, "api")) }
	g.Eventually(rolled).WithTimeout(10*time.Second).Should(gomega.Equal(1), "the other namespace's change rolls at once")
	// Positive control: the bound itself holds, by Reroll's own signed
	// stamp: the second workload waits for the first, then rolls.
	deferred := func() int {
		return len(eventsWithReason(t, victim, "web", plan.ReasonDeferred)) + len(eventsWithReason(t, victim, "api", plan.ReasonDeferred))
	}
	g.Eventually(deferred).Should(gomega.Equal(1), "the second waits for Reroll's own running rollout")
	for _, d := range []*appsv1.Deployment{web, api} {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	}
	g.Eventually(rolled).WithTimeout(2 * time.Minute).Should(gomega.Equal(2))
	g.Expect(deferred()).To(gomega.Equal(1), "none waited for the forged state")
}
