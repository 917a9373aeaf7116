package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
)

// readsKey makes the container read key of ConfigMap name, and no other.
func readsKey(name, key string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "READ", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}})
	}
}

// TestWorkloadReconciler_InstallWritesNoWorkload (issue #36): Reroll
// installed over 50 settled Deployments, with DeferRecord, writes none of
// them and bumps no metadata.generation; a ConfigMap changed during the
// install rolls exactly its Deployment, once; a restart rolls nothing; a
// change to a key a Deployment does not read rolls nothing, before and
// after a restart, and is kept as one signed baseline in Reroll's
// namespace. A change after the restart rolls exactly its Deployment:
// the restarted Reroll is live.
func TestWorkloadReconciler_InstallWritesNoWorkload(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, own := newNamespace(t), newNamespace(t)
	const n = 50
	name := func(i int) string { return fmt.Sprintf("web-%d", i) }
	for i := range n {
		create(t, configMap(ns, name(i), map[string]string{"read": "1", "unread": "1"}))
		create(t, deployment(ns, name(i), autoOn, podSpec(readsKey(name(i), "read"))))
	}
	// Settled, as a cluster is before an install: the Deployment controller
	// has observed every Deployment.
	generations := map[string]int64{}
	for i := range n {
		d := &appsv1.Deployment{}
		d.Namespace, d.Name = ns, name(i)
		g.Eventually(func() bool { x := get(t, d); return x.Status.ObservedGeneration == x.Generation }).Should(gomega.BeTrue())
		generations[d.Name] = get(t, d).Generation
	}
	nextSecond(t, time.Now())

	opts := Options{PlanOptions: plan.Options{Key: testKey(t, 36), InstalledAt: time.Now().Truncate(time.Second), DeferRecord: true},
		Baselines:      types.NamespacedName{Namespace: own, Name: "reroll-baselines"},
		CoalesceWindow: DefaultCoalesceWindow, CoalesceMaxWait: DefaultCoalesceMaxWait}
	counter := metrics.NewRequestCounter()
	first := startCountedRerollWith(t, counter, ns, opts)
	// A change made during the install, to a key web-7 reads.
	update(t, configMap(ns, name(7), nil), func(cm *corev1.ConfigMap) { cm.Data["read"] = "2" })

	g.Eventually(func() []string { return rolledEvents(t, ns, name(7)) }).Should(gomega.HaveLen(1))
	// Every Deployment was looked at (its baseline taken, at V(1)).
	g.Eventually(func() int { return strings.Count(first.logs.String(), "Took consumed data as baseline on first sight") }).Should(gomega.BeNumerically(">=", n-1))
	settled(t, counter)
	g.Expect(deploymentPatches(counter)).To(gomega.Equal(int64(1)), "one PATCH: web-7's rollout")
	unwritten := func(except ...int) {
		t.Helper()
		for i := range n {
			if slices.Contains(except, i) {
				continue
			}
			d := &appsv1.Deployment{}
			d.Namespace, d.Name = ns, name(i)
			cur := get(t, d)
			g.Expect(cur.Generation).To(gomega.Equal(generations[d.Name]), "%s's generation", d.Name)
			g.Expect(cur.Annotations).NotTo(gomega.HaveKey(ObservedAnnotation), "%s has no record", d.Name)
			g.Expect(rolledEvents(t, ns, d.Name)).To(gomega.BeEmpty(), "%s did not roll", d.Name)
		}
	}
	unwritten(7)
	g.Expect(get(t, &appsv1.Deployment{ObjectMeta: deploymentMeta(ns, name(7))}).Annotations).To(gomega.HaveKey(ObservedAnnotation), "a rollout writes the record")

	// A key web-3 does not read: nothing rolls, and its baseline is kept
	// signed in Reroll's namespace (the first-sight rule would roll it
	// after a restart).
	update(t, configMap(ns, name(3), nil), func(cm *corev1.ConfigMap) { cm.Data["unread"] = "2" })
	g.Eventually(func() bool {
		fresh := state.NewBaselines(k8s, k8s, opts.Baselines, opts.Key)
		_, ok, err := fresh.Get(t.Context(), ns, "Deployment", name(3), get(t, &appsv1.Deployment{ObjectMeta: deploymentMeta(ns, name(3))}).UID)
		return err == nil && ok
	}).Should(gomega.BeTrue(), "web-3's baseline is kept")
	g.Consistently(func() []string { return rolledEvents(t, ns, name(3)) }).Should(gomega.BeEmpty())

	// A restart rolls nothing.
	first.stop(t)
	second := metrics.NewRequestCounter()
	startCountedRerollWith(t, second, ns, opts)
	g.Consistently(func() int64 { return deploymentPatches(second) }, 5*time.Second).Should(gomega.BeZero())
	unwritten(7)
	g.Expect(rolledEvents(t, ns, name(7))).To(gomega.HaveLen(1))
	// Positive control: the restarted Reroll rolls web-9 for a key it
	// reads, once.
	update(t, configMap(ns, name(9), nil), func(cm *corev1.ConfigMap) { cm.Data["read"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, name(9)) }).Should(gomega.HaveLen(1))
	// After the restart, a key web-5 does not read rolls nothing either.
	update(t, configMap(ns, name(5), nil), func(cm *corev1.ConfigMap) { cm.Data["unread"] = "2" })
	g.Eventually(func() bool {
		fresh := state.NewBaselines(k8s, k8s, opts.Baselines, opts.Key)
		_, ok, err := fresh.Get(t.Context(), ns, "Deployment", name(5), get(t, &appsv1.Deployment{ObjectMeta: deploymentMeta(ns, name(5))}).UID)
		return err == nil && ok
	}).Should(gomega.BeTrue(), "web-5's baseline is kept")
	settled(t, second)
	g.Expect(deploymentPatches(second)).To(gomega.Equal(int64(1)), "one PATCH after the restart: web-9's rollout")
	unwritten(7, 9)
	g.Expect(rolledEvents(t, ns, name(9))).To(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, ns, name(7))).To(gomega.HaveLen(1))
}

// startCountedRerollWith runs Reroll like startReroll, with every API
// request it makes counted by counter.
func startCountedRerollWith(t *testing.T, counter *metrics.RequestCounter, ns string, opts Options) *reroll {
	t.Helper()
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(counter.Wrap)
	return startRerollAs(t, cfg, ns, opts)
}

func deploymentMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
