package controller

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// The security review's list-annotation cases (issue #24), run as a tenant
// would: one namespace full of costly Reloader lists, and an innocent
// Deployment in another namespace whose ConfigMap changes meanwhile. The
// innocent rollout must not wait for the tenant's reconciles, and Reroll's
// heap must stay bounded. These tests are not parallel, so that the heap
// they measure is Reroll's and theirs alone.

// rollDeadline is how long the innocent rollout may take on a loaded
// two-core machine; before the limits it took 298 s.
const rollDeadline = 20 * time.Second

// heapGrowthBound is how much the live heap may grow while the tenant's
// workloads are reconciled; before the limits, the memory case retained
// about 300 MiB.
const heapGrowthBound = 64 << 20

// liveHeap is the heap in use after a collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// tenantList is a 64-entry Reloader ConfigMap list: entry(i) for each i.
func tenantList(entry func(i int) string) map[string]string {
	entries := make([]string, 64)
	for i := range entries {
		entries[i] = entry(i)
	}
	return map[string]string{"configmap.reloader.stakater.com/reload": strings.Join(entries, ",")}
}

// rollsBesideTenant starts Reroll over a tenant namespace and an innocent
// one, lets tenant create its workloads, changes the innocent Deployment's
// ConfigMap, and checks that it rolls within rollDeadline and that the
// tenant's workloads each got a Warning naming their list annotation.
func rollsBesideTenant(t *testing.T, tenant func(ns string) []string) {
	g := newT(t)
	ns, other := newNamespace(t), newNamespace(t)
	create(t, configMap(other, "cfg", map[string]string{"a": "1"}))
	innocent := deployment(other, "innocent", autoOn, podSpec(envFrom("cfg")))
	create(t, innocent)
	startReroll(t, ns, Options{Scope: scope.Scope{Namespaces: []string{ns, other}}})
	recorded(t, innocent)
	// Positive control of the heap bound's baseline: measured with Reroll
	// running and idle.
	before := liveHeap()

	names := tenant(ns)
	update(t, configMap(other, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, other, "innocent") }, rollDeadline).Should(gomega.HaveLen(1))

	// Each tenant workload was considered, and told why it rolls nothing.
	for _, name := range names {
		g.Eventually(func() []string { return eventsWithReason(t, ns, name, ReasonInvalidAnnotation) }).Should(
			gomega.ContainElement(gomega.ContainSubstring("configmap.reloader.stakater.com/reload")), name)
	}
	g.Expect(liveHeap()).To(gomega.BeNumerically("<", before+heapGrowthBound))
}

func TestWorkloadReconciler_CostlyPatternsDelayNoOtherNamespace(t *testing.T) {
	rollsBesideTenant(t, func(ns string) []string {
		// 300 ConfigMaps with 245-character names.
		for i := range 300 {
			create(t, configMap(ns, fmt.Sprintf("%s-%04d", strings.Repeat("n", 240), i), map[string]string{"a": "1"}))
		}
		var names []string
		// Four Deployments (one per reconcile worker of the kind) with the
		// review's entries, each refused at compile; four more with entries
		// just within the per-entry limit, whose matching against the 300
		// names would cost about 1.6e9 units and is stopped by the budget.
		for i := range 4 {
			names = append(names, fmt.Sprintf("slow-%d", i), fmt.Sprintf("budget-%d", i))
			create(t,
				deployment(ns, names[len(names)-2], tenantList(func(j int) string { return fmt.Sprintf("(?:.?){999}#%d", j) }), podSpec()),
				deployment(ns, names[len(names)-1], tenantList(func(j int) string { return "(?:.?){80}#" + strings.Repeat("b", j%10) }), podSpec()),
			)
		}
		return names
	})
}

func TestWorkloadReconciler_LargeClassPatternsKeepHeapBounded(t *testing.T) {
	rollsBesideTenant(t, func(ns string) []string {
		var names []string
		// 16 Deployments, each with a 64-entry list of about 2,900 bytes:
		// every entry compiles to about 1 MiB without the limits.
		for i := range 16 {
			names = append(names, fmt.Sprintf("classes-%d", i))
			create(t, deployment(ns, names[i], tenantList(func(j int) string {
				return fmt.Sprintf(`(?:\pL{10}|\pN{10}|\pM{10}|\pS{10}){100}z%02d%02d`, i, j)
			}), podSpec()))
		}
		return names
	})
}

// 120 Deployments whose rollout window is 250 KB of a window that never
// opens (30 February) were deferred for good, re-reconciled every 5 s at
// about 0.7 CPU s each, and kept a Deployment of another namespace 14-27 s
// late for as long as they existed. Now the window is refused with a
// Warning naming it, nothing is deferred or polled, and a change in another
// namespace rolls at once.
func TestWorkloadReconciler_NeverOpeningWindowsDelayNoOtherNamespace(t *testing.T) {
	g := newT(t)
	ns, other := newNamespace(t), newNamespace(t)
	create(t, configMap(other, "cfg", map[string]string{"a": "1"}), configMap(ns, "shared", map[string]string{"a": "1"}))
	innocent := deployment(other, "innocent", autoOn, podSpec(envFrom("cfg")))
	create(t, innocent)
	never := strings.Repeat("0 0 30 2 * 1h;", 250*1024/len("0 0 30 2 * 1h;"))
	var tenant []*appsv1.Deployment
	for i := range 120 {
		d := deployment(ns, fmt.Sprintf("never-%d", i), map[string]string{"reroll.dev/auto": "true", plan.RolloutWindowAnnotation: never}, podSpec(envFrom("shared")))
		d.Spec.Replicas = ptr.To[int32](0)
		tenant = append(tenant, d)
		create(t, d)
	}
	startReroll(t, ns, Options{Scope: scope.Scope{Namespaces: []string{ns, other}}})
	recorded(t, innocent)
	for _, d := range tenant {
		recorded(t, d)
	}

	// The tenant's change: before the limits, every one of the 120 was
	// deferred for good and decided again every 5 s.
	update(t, configMap(ns, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	for _, d := range tenant {
		g.Eventually(func() []string { return eventsWithReason(t, ns, d.Name, ReasonInvalidAnnotation) }).Should(
			gomega.ContainElement(gomega.ContainSubstring(plan.RolloutWindowAnnotation)), d.Name)
		g.Expect(eventsWithReason(t, ns, d.Name, plan.ReasonDeferred)).To(gomega.BeEmpty(), d.Name)
	}
	// Then the innocent change, while the tenant's workloads exist.
	update(t, configMap(other, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, other, "innocent") }, rollDeadline).Should(gomega.HaveLen(1))
}
