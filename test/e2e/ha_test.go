//go:build e2e

package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Short Lease timings so that a fail-over fits in a test; the defaults are
// 15s/10s/2s (docs/flags.md).
const (
	haLeaseDuration = 4 * time.Second
	haRenewDeadline = 3 * time.Second
	haRetryPeriod   = time.Second
)

// TestHA_StandbyTakesOverAndRollsOnce runs two replicas with --enable-ha:
// one leads, both are ready (the standby's caches are synced), and when the
// leader dies without releasing the Lease (SIGKILL), the standby takes the
// Lease within one lease duration and rolls, exactly once, the ConfigMap
// change made during the fail-over.
func TestHA_StandbyTakesOverAndRollsOnce(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "reroll-ha-system-", nil)
	apps := newNamespace(t, "reroll-ha-apps-", nil)
	createWorkload(t, apps)
	args := []string{
		"--enable-ha", "--namespaces=" + apps,
		"--leader-election-lease-duration=" + haLeaseDuration.String(),
		"--leader-election-renew-deadline=" + haRenewDeadline.String(),
		"--leader-election-retry-period=" + haRetryPeriod.String(),
	}
	replicas := []*process{
		startReroll(t, plane.Kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-a"}),
		startReroll(t, plane.Kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-b"}),
	}
	leading := func(p *process) float64 {
		return p.sample(t, "leader_election_master_status", map[string]string{"name": "reroll-leader"})
	}

	// Exactly one leads; the other stays a standby, and both are ready.
	var leader, standby *process
	g.Eventually(func() []float64 { return []float64{leading(replicas[0]), leading(replicas[1])} }).
		Should(gomega.Or(gomega.Equal([]float64{1, 0}), gomega.Equal([]float64{0, 1})))
	leader, standby = replicas[0], replicas[1]
	if leading(replicas[1]) == 1 {
		leader, standby = replicas[1], replicas[0]
	}
	g.Consistently(func() float64 { return leading(standby) }).Should(gomega.BeZero(), "one leader at a time")
	for _, p := range replicas {
		g.Expect(readyz(t, p)).To(gomega.Equal(http.StatusOK), "a standby is ready: its caches are synced")
	}
	// The leader looked at the workload and wrote nothing; the standby has
	// not (it reconciles nothing until it leads), so after the fail-over the
	// first-sight rule, not a record, tells it what changed.
	expectFirstSight(t, leader, apps, 1, 1)
	g.Expect(standby.sample(t, "reroll_references", nil)).To(gomega.BeZero(), "a standby reconciles nothing")
	template := func() map[string]string { return deploymentIn(t, apps, "web").Spec.Template.Annotations }

	// The leader dies without releasing the Lease; the data changes while
	// nobody leads.
	killed := time.Now()
	g.Expect(leader.cmd.Process.Kill()).To(gomega.Succeed())
	leader.done <- <-leader.done
	mutate(t, &corev1.ConfigMap{}, apps, "app-config", func(o client.Object) { o.(*corev1.ConfigMap).Data["LOG_LEVEL"] = "debug" })

	// The standby takes the Lease, then rolls. The deadlines are generous
	// (a loaded machine); how long the fail-over takes is logged, never
	// asserted (durations belong to `make bench`).
	g.Eventually(func() float64 { return leading(standby) }).WithPolling(50 * time.Millisecond).Should(gomega.Equal(1.0))
	tookOver := time.Since(killed)
	g.Eventually(func() map[string]string { return template() }).WithPolling(50 * time.Millisecond).Should(gomega.HaveKey(configHashAnnotation))
	rolled := time.Since(killed)
	t.Logf("fail-over with lease %s, renew %s, retry %s: new leader after %s, workload rolled after %s",
		haLeaseDuration, haRenewDeadline, haRetryPeriod, tookOver.Round(10*time.Millisecond), rolled.Round(10*time.Millisecond))

	// Rolled exactly once: one Rolled Event, one new ReplicaSet, and the
	// hash does not change again.
	hash := template()[configHashAnnotation]
	g.Eventually(func() int32 { return rolledEvents(t, apps, "web") }).Should(gomega.Equal(int32(1)))
	g.Consistently(func() string { return template()[configHashAnnotation] }, 2*haLeaseDuration).Should(gomega.Equal(hash))
	g.Expect(rolledEvents(t, apps, "web")).To(gomega.Equal(int32(1)))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, apps) }).Should(gomega.HaveLen(2))
}

// readyz returns the status code of p's /readyz.
func readyz(t *testing.T, p *process) int {
	t.Helper()
	resp, err := http.Get("http://" + p.probeAddr + "/readyz")
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	defer resp.Body.Close()
	return resp.StatusCode
}

// rolledEvents counts the Rolled Events on workload ns/name, with the
// recorder's aggregation (Count) undone.
func rolledEvents(t *testing.T, ns, name string) int32 {
	t.Helper()
	var list corev1.EventList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var n int32
	for _, e := range list.Items {
		if e.Reason == "Rolled" && e.InvolvedObject.Name == name {
			n += max(e.Count, 1)
		}
	}
	return n
}
