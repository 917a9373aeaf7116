package controller

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/trigger"
)

// deferredDeployments is reroll_namespace_deferred_total of the Deployment
// controllers of this process (every test's Reroll adds to it).
func deferredDeployments(t *testing.T) float64 {
	t.Helper()
	for _, m := range family(t, "reroll_namespace_deferred_total") {
		if hasLabels(m, map[string]string{"controller": "deployment"}) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// floodWorkloads is how many Deployments the flooding namespace has: more
// than the default burst (fairness.DefaultBurst), so that one change of
// their ConfigMap spends the namespace's budget.
const floodWorkloads = 150

// One namespace floods (150 Deployments whose ConfigMap changes every
// 200 ms, for as long as the test runs) while another namespace's single
// Deployment sees one change: that change rolls while the flood goes on,
// and the flood's own rollouts go on too (nothing is dropped). Default
// flags and a real key. Not parallel: the deferral counter is the
// process's, and the timing is the point. The latency is logged; the
// bound asserted is loose, for a loaded machine: measured on a 2-core
// machine shared with other test runs, the change rolled 0.13-0.62 s after
// it was written (6 runs), and 2.0-3.8 s with --namespace-reconcile-rate=0
// (3 runs; docs/security.md, "Third review, part C").
func TestWorkloadReconciler_AnotherNamespacesFloodDoesNotHoldBackARollout(t *testing.T) {
	g := newT(t)
	flood, quiet := newNamespace(t), newNamespace(t)
	startReroll(t, flood, Options{PlanOptions: plan.Options{Key: testKey(t, 41)}, Scope: scope.Scope{Namespaces: []string{flood, quiet}}})

	create(t, configMap(flood, "shared", map[string]string{"n": "0"}), configMap(quiet, "app", map[string]string{"level": "info"}))
	var floods []*appsv1.Deployment
	for i := range floodWorkloads {
		d := deployment(flood, fmt.Sprintf("w%03d", i), autoOn, podSpec(envFrom("shared")))
		d.Spec.Replicas = ptr.To[int32](0)
		create(t, d)
		floods = append(floods, d)
	}
	web := deployment(quiet, "web", autoOn, podSpec(envFrom("app")))
	web.Spec.Replicas = ptr.To[int32](0)
	create(t, web)
	recorded(t, web)
	for _, d := range floods {
		recorded(t, d)
	}

	// The flood: the shared ConfigMap changes every 200 ms until stopped;
	// each change reaches all 150 Deployments.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			cm := configMap(flood, "shared", nil)
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
				continue
			}
			cm.Data = map[string]string{"n": strconv.Itoa(n)}
			_ = k8s.Update(t.Context(), cm)
		}
	}()
	var once sync.Once
	stopFlood := func() { once.Do(func() { close(stop); wg.Wait() }) }
	t.Cleanup(stopFlood)

	// The flood is under way and over its namespace's budget: its rollouts
	// have started and some of its reconciles were deferred.
	before := deferredDeployments(t)
	g.Eventually(func() int { return countRolled(t, flood) }).WithTimeout(3 * time.Minute).Should(gomega.BeNumerically(">", 0))
	g.Eventually(func() float64 { return deferredDeployments(t) }).WithTimeout(3 * time.Minute).Should(gomega.BeNumerically(">", before))

	// The quiet namespace's one change rolls, while the flood goes on.
	changed := time.Now()
	update(t, configMap(quiet, "app", nil), func(cm *corev1.ConfigMap) { cm.Data["level"] = "debug" })
	g.Eventually(func() map[string]string { return get(t, web).Spec.Template.Annotations }).
		WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	t.Logf("the quiet namespace's change rolled %s after it was written, during the flood", time.Since(changed).Round(time.Millisecond))
	g.Eventually(func() []string { return rolledEvents(t, quiet, "web") }).Should(gomega.HaveLen(1))

	// Nothing of the flood was dropped: once it stops, every one of its
	// Deployments rolls to the same, last content. (Waiting for this also
	// keeps the manager's stop away from a full queue: controller-runtime's
	// priority queue can hang at shutdown, kubernetes-sigs/controller-runtime#3538.)
	stopFlood()
	g.Eventually(func(g gomega.Gomega) {
		hashes := rolledHashes(t, flood)
		g.Expect(hashes).To(gomega.HaveLen(floodWorkloads))
		g.Expect(hashes).To(gomega.HaveEach(hashes[0]))
	}).WithTimeout(3 * time.Minute).Should(gomega.Succeed())
}

// rolledHashes are the config-hash annotations of the Deployments of ns
// that Reroll has rolled at least once.
func rolledHashes(t *testing.T, ns string) []string {
	t.Helper()
	var list appsv1.DeploymentList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []string
	for _, d := range list.Items {
		if h, ok := d.Spec.Template.Annotations[trigger.ConfigHashAnnotation]; ok {
			out = append(out, h)
		}
	}
	return out
}

// countRolled is how many Deployments of ns Reroll has rolled at least once.
func countRolled(t *testing.T, ns string) int {
	return len(rolledHashes(t, ns))
}
