package controller

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/workload"
)

// runningRollouts counts the Deployments of ns whose rollout Reroll started
// and whose status does not report it complete, as a user reading the
// objects would.
func runningRollouts(t *testing.T, ns string) int {
	t.Helper()
	var list appsv1.DeploymentList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	n := 0
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[plan.RolledAtAnnotation]; ok && !(workload.Deployment{}).Progress(&list.Items[i]).Done {
			n++
		}
	}
	return n
}

func TestWorkloadReconciler_MaxConcurrentRolloutsHoldsUnderStorm(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	const workloads, bound = 6, 2
	create(t, configMap(ns, "shared", map[string]string{"a": "1"}))
	var ds []*appsv1.Deployment
	for i := range workloads {
		d := deployment(ns, fmt.Sprintf("web-%d", i), map[string]string{"reroll.dev/auto": "true"}, podSpec(envFrom("shared")))
		create(t, d)
		ds = append(ds, d)
	}
	startReroll(t, ns, Options{PlanOptions: plan.Options{MaxConcurrentRollouts: bound, Recheck: time.Second}})
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
		// Paused by the user: the rollouts Reroll starts run until resumed.
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	rolled := func() int {
		n := 0
		for _, d := range ds {
			n += len(rolledEvents(t, ns, d.Name))
		}
		return n
	}

	update(t, configMap(ns, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(rolled).Should(gomega.Equal(bound))
	g.Eventually(func() int {
		n := 0
		for _, d := range ds {
			n += len(eventsWithReason(t, ns, d.Name, plan.ReasonDeferred))
		}
		return n
	}).Should(gomega.Equal(workloads-bound), "the workloads beyond the bound wait")
	g.Consistently(rolled).Should(gomega.Equal(bound), "no slot frees while the rollouts run")

	most := 0
	for _, d := range ds {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	}
	g.Eventually(func() int {
		most = max(most, runningRollouts(t, ns))
		return rolled()
	}).WithTimeout(4*time.Minute).Should(gomega.Equal(workloads), "every workload rolls, once")
	for _, d := range ds {
		g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
	}
	g.Expect(most).To(gomega.BeNumerically("<=", bound), "at no sampled moment did more than the bound run")
}

// testClock is a time the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func TestWorkloadReconciler_WindowDefersThenRollsOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A Sunday noon; the window opens on weekdays at 02:00 UTC.
	clk := &testClock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	create(t, configMap(ns, "cfg", map[string]string{"a": "1", "b": "1"}))
	d := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true", plan.RolloutWindowAnnotation: "0 2 * * MON-FRI 2h"}, podSpec(envFrom("cfg")))
	create(t, d)
	startReroll(t, ns, Options{Now: clk.Now})
	recorded(t, d)
	waitFirstReplicaSet(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonDeferred) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("until 2026-11-23T02:00:00Z")))
	g.Expect(get(t, d).Annotations).To(gomega.HaveKeyWithValue(plan.PendingAnnotation, gomega.HavePrefix("2026-11-22T12:00:00Z rollout-window sig=")))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Consistently(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(1), "nothing rolls outside the window")

	// Monday 02:30: the window is open; any reconcile rolls.
	clk.set(time.Date(2026, 11, 23, 2, 30, 0, 0, time.UTC))
	update(t, d, func(d *appsv1.Deployment) { d.Annotations["example.com/nudge"] = "1" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.And(
		gomega.ContainSubstring("a"), gomega.ContainSubstring("b"))))
	waitRolledOut(t, d)
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(2), "the two changes made one rollout")
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
	g.Expect(eventsWithReason(t, ns, "web", plan.ReasonDeferred)).To(gomega.HaveLen(1))
}

func TestWorkloadReconciler_WaitForRolloutFoldsChanges(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1", "b": "1"}))
	// No node matches: the Deployment's first rollout never completes.
	d := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true", plan.WaitForRolloutAnnotation: "true"},
		podSpec(envFrom("cfg"), func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"example.com/none": "true"} }))
	create(t, d)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Recheck: time.Second}})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonDeferred) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("previous rollout is still in progress")))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty(), "nothing rolls while the previous rollout runs")

	// The user fixes the Deployment; once that rollout completes, the two
	// changes roll, once.
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = nil })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.And(
		gomega.ContainSubstring("a"), gomega.ContainSubstring("b"))))
	waitRolledOut(t, d)
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadReconciler_PauseHoldSurvivesKill(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	const period = 8 * time.Second
	create(t, configMap(ns, "cfg", map[string]string{"a": "1", "b": "1"}))
	s := statefulSet(ns, "db", map[string]string{"reroll.dev/auto": "true", "reroll.dev/pause-period": period.String()}, podSpec(envFrom("cfg")))
	create(t, s)
	first := startReroll(t, ns, Options{})
	recorded(t, s)
	before := get(t, s).Spec.Template.DeepCopy()

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "db", plan.ReasonDeferred) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("pause period of 8s")))
	since := plan.PendingSince(digest.Key{}, string(get(t, s).UID), get(t, s).Annotations, time.Time{})
	g.Expect(since.IsZero()).To(gomega.BeFalse())

	// Reroll is killed during the hold; nothing on the StatefulSet is
	// paused, so nothing can stay paused; a change meanwhile joins.
	first.stop(t)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Expect(get(t, s).Spec.Template).To(gomega.Equal(*before))
	g.Expect(get(t, s).Spec.UpdateStrategy.RollingUpdate).To(gomega.Or(gomega.BeNil(),
		gomega.HaveField("Partition", gomega.Or(gomega.BeNil(), gomega.HaveValue(gomega.BeZero())))), "Reroll never holds a StatefulSet by partition")

	startReroll(t, ns, Options{})
	g.Eventually(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.ConsistOf(gomega.And(
		gomega.ContainSubstring("a"), gomega.ContainSubstring("b"))))
	g.Expect(time.Since(since)).To(gomega.BeNumerically(">=", period-time.Second), "rolled only after the period (second precision)")
	g.Expect(get(t, s).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
	g.Consistently(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.HaveLen(1))
}

// inClosedNamespaceWindow makes a namespace whose rollout window opens at
// 02:00 UTC on the 1st of January only (closed now), with Deployment "web"
// consuming ConfigMap "cfg", starts Reroll and waits for the record.
func inClosedNamespaceWindow(t *testing.T) (string, *appsv1.Deployment, *reroll) {
	t.Helper()
	ns := newNamespace(t)
	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Annotations = map[string]string{plan.RolloutWindowAnnotation: "0 2 1 1 * 1h"}
	})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true"}, podSpec(envFrom("cfg")))
	create(t, d)
	rr := startReroll(t, ns, Options{})
	recorded(t, d)
	return ns, d, rr
}

func TestWorkloadReconciler_NamespaceWindowAndOverride(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, d, rr := inClosedNamespaceWindow(t)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonDeferred) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("(on the namespace)")))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	// The gauges, read from this run's cache (one namespace).
	gauges := rollout.NewTracker(0, digest.Key{}, rr.cache, time.Now)
	gauges.Add(rollout.Kind{Kind: workload.Deployment{}, Progress: workload.Deployment{}})
	g.Eventually(func() map[string]float64 { return collect(t, gauges) }).Should(gomega.And(
		gomega.HaveKeyWithValue("reroll_rollouts_running", 0.0),
		gomega.HaveKeyWithValue("reroll_rollouts_waiting", 1.0),
		gomega.HaveKeyWithValue("reroll_rollouts_oldest_waiting_seconds", gomega.BeNumerically(">", 0)),
		gomega.HaveKeyWithValue("reroll_rollouts_held_by_storm", 0.0), // held by a window, not the storm breaker
	))

	// The emergency override rolls at once.
	update(t, d, func(d *appsv1.Deployment) { d.Annotations[plan.RolloutOverrideAnnotation] = "true" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
}

// collect returns the samples of a collector of unlabelled gauges, by
// metric name.
func collect(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	newT(t).Expect(reg.Register(c)).To(gomega.Succeed())
	families, err := reg.Gather()
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestWorkloadReconciler_RolloutQueueSurvivesRestart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	const workloads = 3
	create(t, configMap(ns, "shared", map[string]string{"a": "1"}))
	var ds []*appsv1.Deployment
	for i := range workloads {
		d := deployment(ns, fmt.Sprintf("web-%d", i), map[string]string{"reroll.dev/auto": "true"}, podSpec(envFrom("shared")))
		create(t, d)
		ds = append(ds, d)
	}
	opts := Options{PlanOptions: plan.Options{MaxConcurrentRollouts: 1, Recheck: time.Second}}
	first := startReroll(t, ns, opts)
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
		// The user pauses every Deployment: the first rollout Reroll starts
		// cannot complete, so the queue is still there when Reroll stops.
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	}
	rolled := func() int {
		n := 0
		for _, d := range ds {
			n += len(rolledEvents(t, ns, d.Name))
		}
		return n
	}
	pending := func() int {
		n := 0
		for _, d := range ds {
			if _, ok := get(t, d).Annotations[plan.PendingAnnotation]; ok {
				n++
			}
		}
		return n
	}

	update(t, configMap(ns, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(rolled).Should(gomega.Equal(1))
	g.Eventually(pending).Should(gomega.Equal(workloads-1), "the others wait, recorded on the objects")
	g.Consistently(rolled).Should(gomega.Equal(1), "the bound holds while the first rollout runs")
	// Reroll stops with the queue on the objects only; the user resumes.
	first.stop(t)
	for _, d := range ds {
		update(t, d, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	}

	startReroll(t, ns, opts)
	most := 0
	g.Eventually(func() int { most = max(most, runningRollouts(t, ns)); return rolled() }).WithTimeout(4 * time.Minute).Should(gomega.Equal(workloads))
	g.Eventually(pending).Should(gomega.BeZero())
	g.Consistently(func() int { most = max(most, runningRollouts(t, ns)); return rolled() }).Should(gomega.Equal(workloads), "nothing rolls twice")
	g.Expect(most).To(gomega.BeNumerically("<=", 1), "at no sampled moment did more than one run")
}

// A workload deferred by its Namespace's window is decided again when the
// Namespace's annotations change, not by polling (the recheck waits for the
// window's opening, weeks away here).
func TestWorkloadReconciler_NamespaceWindowChangeDecidesAgain(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, d, _ := inClosedNamespaceWindow(t)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonDeferred) }).Should(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		delete(n.Annotations, plan.RolloutWindowAnnotation)
	})
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }, 30*time.Second).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(plan.PendingAnnotation))
}
