package controller

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/revert"
)

// revertingOperator stands in for an operator that owns a Deployment's pod
// template: whenever the template carries Reroll's config hash, it puts its
// own template back (an update as field manager "my-operator"). It returns
// how many times it did.
func revertingOperator(t *testing.T, ns string) *atomic.Int32 {
	t.Helper()
	g := newT(t)
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	inf, err := c.GetInformer(t.Context(), &appsv1.Deployment{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var reverts atomic.Int32
	put := func(o any) {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			return
		}
		if _, has := d.Spec.Template.Annotations["reroll.dev/config-hash"]; !has {
			return
		}
		reverted := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			reverted = false
			cur := &appsv1.Deployment{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), cur); err != nil {
				return err
			}
			// The event may be older than the operator's last revert.
			if _, has := cur.Spec.Template.Annotations["reroll.dev/config-hash"]; !has {
				return nil
			}
			delete(cur.Spec.Template.Annotations, "reroll.dev/config-hash")
			reverted = true
			return k8s.Update(context.Background(), cur, client.FieldOwner("my-operator"))
		})
		if err == nil && reverted {
			reverts.Add(1)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: put, UpdateFunc: func(_, o any) { put(o) }})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Start(ctx) }()
	t.Cleanup(cancel)
	g.Expect(c.WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	return &reverts
}

func TestRevert_StopsPatchingATemplateAnOperatorPutsBack(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	// The operator generates the Deployment, so it manages the template.
	d := evictDeployment(t, ns, "web", 2, autoOn)
	reverts := revertingOperator(t, ns)
	revertsBefore := metrics.TemplateRevertCount("Deployment")
	first := startReroll(t, ns, Options{PodEviction: true})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1), "Reroll patched the template once")
	g.Eventually(reverts.Load).Should(gomega.BeEquivalentTo(1), "the operator put its template back")
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonTemplateReverted) }).Should(gomega.ConsistOf(
		gomega.And(gomega.HavePrefix(`Field manager "my-operator" put back the pod template Reroll changed`), gomega.ContainSubstring("reroll.dev/restart: evict"))))
	g.Expect(revert.ParseReverted(get(t, d).Annotations[revert.RevertedAnnotation])).To(gomega.HaveField("Manager", "my-operator"))
	g.Expect(metrics.TemplateRevertCount("Deployment") - revertsBefore).To(gomega.BeEquivalentTo(1))

	// After a restart of Reroll, the next change is recorded (positive
	// check) but not patched: no patch war.
	first.stop(t)
	startReroll(t, ns, Options{PodEviction: true})
	before := get(t, d).Annotations[ObservedAnnotation]
	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "3" })
	g.Eventually(func() string { return get(t, d).Annotations[ObservedAnnotation] }).ShouldNot(gomega.Equal(before))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonNotRolled) }).Should(gomega.ContainElement(
		gomega.HavePrefix(`ConfigMap/cfg changed keys k; Field manager "my-operator" put back the pod template Reroll changed`)))
	g.Consistently(reverts.Load).Should(gomega.BeEquivalentTo(1))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))

	// Switching the workload to eviction restarts its pods for the next
	// change without touching the template.
	l := watchPods(t, ns, labelsFor("web"))
	old := l.allReady(t, 2)
	update(t, d, func(d *appsv1.Deployment) { d.Annotations[eviction.RestartAnnotation] = eviction.RestartEvict })
	g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.HaveKeyWithValue(eviction.RestartAnnotation, eviction.RestartEvict))
	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "4" })
	expectReplacedOnce(t, l, old, 2)
	g.Expect(reverts.Load()).To(gomega.BeEquivalentTo(1))
}
