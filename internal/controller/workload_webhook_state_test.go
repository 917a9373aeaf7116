package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
)

// The webhook used to restore every state annotation a write dropped, also
// when the write was Reroll's own clean-up: a pending change stayed
// "waiting" for good (the bound stayed full), a StatefulSet's pause period
// started from a change long rolled, a finished eviction came back, and a
// revert removed by hand reappeared. With the webhook on, each feature's
// clean-up must stick.
func TestWebhook_KeepsReroll_sCleanUpWithTheGates(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	const pause = 4 * time.Second
	create(t,
		configMap(ns, "shared", map[string]string{"a": "1"}),
		configMap(ns, "late", map[string]string{"a": "1"}),
		configMap(ns, "db", map[string]string{"a": "1"}),
		configMap(ns, "cfg", map[string]string{"k": "1"}))
	web := deployment(ns, "web", autoOn, podSpec(envFrom("shared")))
	api := deployment(ns, "api", autoOn, podSpec(envFrom("shared")))
	late := deployment(ns, "late", autoOn, podSpec(envFrom("late")))
	db := statefulSet(ns, "db", map[string]string{"reroll.dev/auto": "true", "reroll.dev/pause-period": pause.String()}, podSpec(envFrom("db")))
	create(t, web, api, late, db)
	// Past every gate: its restart must not wait for db's rollout under the
	// bound of 1.
	ev := evictDeployment(t, ns, "ev", 2, map[string]string{"reroll.dev/auto": "true", eviction.RestartAnnotation: eviction.RestartEvict, plan.RolloutOverrideAnnotation: "true"})
	pods := watchPods(t, ns, labelsFor("ev"))
	oldPods := pods.allReady(t, 2)
	startRerollWithWebhook(t, ns, Options{PlanOptions: plan.Options{MaxConcurrentRollouts: 1, Recheck: time.Second}, PodEviction: true})
	for _, obj := range []*appsv1.Deployment{web, api, late, ev} {
		recorded(t, obj)
		g.Eventually(func() map[string]string { return get(t, obj).Labels }).Should(gomega.HaveKey(ManagedLabel), "the webhook sees the writes to %s", obj.Name)
		waitRolledOut(t, obj)
	}
	recorded(t, db)

	// The bound: web and api share one ConfigMap, one waits for the other.
	// Paused by the user, the first rollout runs until resumed.
	for _, d := range []*appsv1.Deployment{web, api} {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	rolled := func() int { return len(rolledEvents(t, ns, "web")) + len(rolledEvents(t, ns, "api")) }
	update(t, configMap(ns, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(rolled).Should(gomega.Equal(1))
	g.Eventually(func() int {
		return len(eventsWithReason(t, ns, "web", plan.ReasonDeferred)) + len(eventsWithReason(t, ns, "api", plan.ReasonDeferred))
	}).Should(gomega.Equal(1), "the other waits for the bound")
	for _, d := range []*appsv1.Deployment{web, api} {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	}
	g.Eventually(rolled).WithTimeout(2*time.Minute).Should(gomega.Equal(2), "both roll, one after the other")
	for _, d := range []*appsv1.Deployment{web, api} {
		g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.Not(gomega.HaveKey(plan.PendingAnnotation)))
		g.Consistently(func() map[string]string { return get(t, d).Annotations }).WithTimeout(3*time.Second).
			Should(gomega.Not(gomega.HaveKey(plan.PendingAnnotation)), "the webhook leaves Reroll's clean-up of %s alone", d.Name)
		waitRolledOut(t, d)
	}
	// The slot is free: a later change rolls without waiting.
	update(t, configMap(ns, "late", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "late") }).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "late", plan.ReasonDeferred)).To(gomega.BeEmpty(), "no stale pending change holds the bound")

	// The pause period of a StatefulSet: each change is held for it.
	update(t, configMap(ns, "db", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.HaveLen(1))
	g.Eventually(func() map[string]string { return get(t, db).Annotations }).Should(gomega.Not(gomega.HaveKey(plan.PendingAnnotation)))
	g.Consistently(func() map[string]string { return get(t, db).Annotations }).WithTimeout(3 * time.Second).
		Should(gomega.Not(gomega.HaveKey(plan.PendingAnnotation)))
	update(t, configMap(ns, "db", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "db", plan.ReasonDeferred) }).
		Should(gomega.HaveLen(2), "the second change waits for its own pause period")
	g.Eventually(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.HaveLen(2))

	// A restart by eviction: once done, its record stays gone and no pod is
	// evicted twice.
	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	// The namespace's other rollouts delete pods too: only ev's count.
	var fresh []types.UID
	g.Eventually(func() int {
		live, ready, _, _ := pods.state()
		fresh = nil
		for _, uid := range live {
			if !slices.Contains(oldPods, uid) {
				fresh = append(fresh, uid)
			}
		}
		if ready != 2 {
			return -1
		}
		return len(fresh)
	}).Should(gomega.Equal(2), "two Ready pods, both new")
	_, _, deleted, _ := pods.state()
	for _, uid := range oldPods {
		g.Expect(deleted[uid]).To(gomega.Equal(1), "each old pod was evicted once")
	}
	g.Eventually(func() map[string]string { return get(t, ev).Annotations }).Should(gomega.Not(gomega.HaveKey(eviction.ProgressAnnotation)))
	g.Consistently(func() map[string]string { return get(t, ev).Annotations }).WithTimeout(3 * time.Second).
		Should(gomega.Not(gomega.HaveKey(eviction.ProgressAnnotation)))
	g.Expect(eventsWithReason(t, ns, "ev", ReasonEvicted)).To(gomega.HaveLen(1))
	_, _, deleted, _ = pods.state()
	for _, uid := range fresh {
		g.Expect(deleted).NotTo(gomega.HaveKey(uid), "no restart started again")
	}

	// A revert record: removing it by hand (the documented way to let Reroll
	// patch again) sticks.
	update(t, web, func(d *appsv1.Deployment) {
		d.Annotations[revert.RevertedAnnotation] = revert.Reverted{Manager: "my-operator", At: time.Now()}.String()
	})
	g.Expect(get(t, web).Annotations).To(gomega.HaveKey(revert.RevertedAnnotation), "positive control: the record is set")
	update(t, web, func(d *appsv1.Deployment) { delete(d.Annotations, revert.RevertedAnnotation) })
	g.Consistently(func() map[string]string { return get(t, web).Annotations }).WithTimeout(3 * time.Second).
		Should(gomega.Not(gomega.HaveKey(revert.RevertedAnnotation)))
}
