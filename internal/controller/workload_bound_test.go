package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// The third review (H3): a tenant pauses a Deployment whose
// progressDeadlineSeconds is 2147483647 (68 years) and marks it
// reroll.dev/rollout-override; Reroll rolls it, and its rollout, which never
// completes, held the only slot of --max-concurrent-rollouts=1 for good:
// another namespace's change never rolled. The deadline counted for the
// bound is now capped at --rollout-timeout.
func TestWorkloadReconciler_ParkedRolloutHoldsNoSlotPastTheRolloutTimeout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	tenant, victim := newNamespace(t), newNamespace(t)
	create(t, configMap(tenant, "cfg", map[string]string{"a": "1"}), configMap(victim, "cfg", map[string]string{"a": "1"}))
	parked := deployment(tenant, "parked", map[string]string{"reroll.dev/auto": "true", plan.RolloutOverrideAnnotation: "true"}, podSpec(envFrom("cfg")))
	parked.Spec.ProgressDeadlineSeconds = ptr.To[int32](2147483647)
	web := deployment(victim, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, parked, web)
	// The most permissive override scope: the tenant's own annotation counts.
	startReroll(t, victim, Options{PlanOptions: plan.Options{Key: testKey(t, 32), MaxConcurrentRollouts: 1, RolloutTimeout: 20 * time.Second,
		Override: plan.OverrideWorkload, Recheck: time.Second}, Scope: scope.Scope{Namespaces: []string{tenant, victim}}})
	for _, d := range []*appsv1.Deployment{parked, web} {
		recorded(t, d)
		waitRolledOut(t, d)
	}
	update(t, parked, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	update(t, configMap(tenant, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, tenant, "parked") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, parked).Annotations).To(gomega.HaveKey(plan.RolledAtAnnotation), "the parked rollout takes the slot")
	rolledParked := time.Now()

	update(t, configMap(victim, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// Positive control: the bound holds while the parked rollout counts.
	g.Eventually(func() []string { return eventsWithReason(t, victim, "web", plan.ReasonDeferred) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("at most 1 run at once")))
	g.Eventually(func() []string { return rolledEvents(t, victim, "web") }).WithTimeout(60*time.Second).Should(gomega.HaveLen(1),
		"the other namespace's change rolls once --rollout-timeout passed")
	g.Expect(time.Since(rolledParked)).To(gomega.BeNumerically(">=", 15*time.Second), "it waited for the timeout, not less")
	g.Eventually(func() []string { return eventsWithReason(t, tenant, "parked", plan.ReasonRolloutTimedOut) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("did not complete within 20s")))
	g.Eventually(func() map[string]string { return get(t, parked).Annotations }).ShouldNot(gomega.HaveKey(plan.RolledAtAnnotation))
}

// The third review (H3): Reroll's own signed reroll.dev/pending, copied
// from a workload while it waited and written back once it had rolled, on
// a workload that rolls nothing (Wave's required object missing: such a
// workload kept its pending), stood ahead of every newer change for good.
// It is now cleared, and it had lapsed anyway: a replayed value counts for
// nothing, and another namespace's change rolls at once.
func TestWorkloadReconciler_ReplayedPendingCountsForNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	tenant, victim := newNamespace(t), newNamespace(t)
	create(t, configMap(tenant, "hold", map[string]string{"a": "1"}), configMap(tenant, "cfg", map[string]string{"a": "1"}),
		configMap(victim, "cfg", map[string]string{"a": "1"}))
	holder := deployment(tenant, "holder", autoOn, podSpec(envFrom("hold")))
	queued := deployment(tenant, "queued", map[string]string{annotation.WaveUpdate: "true"}, podSpec(envFrom("cfg")))
	web := deployment(victim, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, holder, queued, web)
	startReroll(t, victim, Options{PlanOptions: plan.Options{Key: testKey(t, 33), MaxConcurrentRollouts: 1, MaxConcurrentRolloutsPerNamespace: 1,
		RolloutTimeout: 15 * time.Second, Recheck: time.Second}, Scope: scope.Scope{Namespaces: []string{tenant, victim}}})
	for _, d := range []*appsv1.Deployment{holder, queued, web} {
		recorded(t, d)
		waitRolledOut(t, d)
	}

	// holder takes the slot (paused, its rollout runs until the timeout);
	// queued waits for it, under Reroll's own signed pending.
	update(t, holder, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	update(t, configMap(tenant, "hold", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, tenant, "holder") }).Should(gomega.HaveLen(1))
	update(t, configMap(tenant, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	var replay string
	g.Eventually(func() string { replay = get(t, queued).Annotations[plan.PendingAnnotation]; return replay }).Should(
		gomega.ContainSubstring(string(plan.DeferMaxConcurrent)))
	// The slot frees at the timeout; queued rolls and its pending goes.
	g.Eventually(func() []string { return rolledEvents(t, tenant, "queued") }).WithTimeout(60 * time.Second).Should(gomega.HaveLen(1))
	g.Eventually(func() map[string]string { return get(t, queued).Annotations }).ShouldNot(gomega.HaveKey(plan.PendingAnnotation))
	waitRolledOut(t, queued)
	g.Eventually(func() map[string]string { return get(t, queued).Annotations }).ShouldNot(gomega.HaveKey(plan.RolledAtAnnotation))

	// The tenant makes queued roll nothing (a required ConfigMap is
	// missing) and writes the signed value back.
	update(t, queued, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = append(d.Spec.Template.Spec.Containers[0].EnvFrom,
			corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}})
	})
	update(t, queued, func(d *appsv1.Deployment) { d.Annotations[plan.PendingAnnotation] = replay })
	g.Eventually(func() map[string]string { return get(t, queued).Annotations }).ShouldNot(gomega.HaveKey(plan.PendingAnnotation),
		"a workload that rolls nothing keeps no pending change")

	// Another namespace's change rolls at once: nothing is ahead of it.
	update(t, configMap(victim, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, victim, "web") }).WithTimeout(10 * time.Second).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, victim, "web", plan.ReasonDeferred)).To(gomega.BeEmpty(), "web waited for no one")
}
