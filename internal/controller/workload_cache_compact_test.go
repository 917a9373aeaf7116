package controller

import (
	"sync"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// Issue #36: the manager's cache holds Deployments, StatefulSets and
// DaemonSets as compact.Workloads (their spec and status encoded), yet a
// Get or List from it returns the trimmed typed object, with its template
// and the sums the transform held, and a rollout from it works.
func TestWorkloadReconciler_CacheHoldsWorkloadsCompact(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	spec := podSpec(envFrom("cfg"))
	objs := []client.Object{deployment(ns, "web", reloaderAutoOn, spec), statefulSet(ns, "db", reloaderAutoOn, spec), daemonSet(ns, "agent", reloaderAutoOn, spec)}
	create(t, objs...)
	rr := startReroll(t, ns, Options{})
	for _, obj := range objs {
		recorded(t, obj)
	}
	kinds := map[string]workload.Kind{"web": workload.Deployment{}, "db": workload.StatefulSet{}, "agent": workload.DaemonSet{}}
	for _, obj := range objs {
		k := kinds[obj.GetName()]
		// What the informer holds, as a new handler of it is given it:
		// the compact form.
		inf, err := rr.cache.GetInformer(t.Context(), k.New())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var mu sync.Mutex
		held := map[string]any{}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
			mu.Lock()
			defer mu.Unlock()
			held[o.(client.Object).GetName()] = o
		}})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(func() any {
			mu.Lock()
			defer mu.Unlock()
			return held[obj.GetName()]
		}).Should(gomega.BeAssignableToTypeOf(&compact.Workload{}), "the informer of %s holds the compact form", k.Name())
		g.Expect(inf.RemoveEventHandler(reg)).To(gomega.Succeed())

		// What a Get returns: the typed, trimmed object.
		got := k.New()
		g.Expect(rr.cache.Get(t.Context(), client.ObjectKeyFromObject(obj), got)).To(gomega.Succeed())
		tm, err := k.PodTemplate(got)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tm.Spec.Containers).To(gomega.HaveLen(1), "%s: the template's containers are there", k.Name())
		g.Expect(tm.Spec.Containers[0].EnvFrom).To(gomega.HaveLen(1), "%s: what Reroll reads is kept", k.Name())
		g.Expect(tm.Spec.Containers[0].Image).To(gomega.BeEmpty(), "%s: the trimmed copy, not the full object", k.Name())
		g.Expect(revert.HeldIn(got)).NotTo(gomega.Equal(revert.Sums{}), "%s: the sums the transform held", k.Name())
		g.Expect(got.GetObjectKind().GroupVersionKind().Kind).To(gomega.Equal(k.Name()))

		// What a List returns: typed items too, with or without copies
		// (compact.NoCopyFor); a list without copies of a compact kind
		// cannot be filled, which is why NoCopyFor exists.
		list := k.NewList()
		g.Expect(rr.cache.List(t.Context(), list, client.InNamespace(ns), compact.NoCopyFor(list))).To(gomega.Succeed())
		g.Expect(meta.LenList(list)).To(gomega.Equal(1))
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		tm, _ = k.PodTemplate(items[0].(client.Object))
		g.Expect(tm.Spec.Containers).To(gomega.HaveLen(1), "%s: a listed item holds its template", k.Name())
		g.Expect(rr.cache.List(t.Context(), k.NewList(), client.InNamespace(ns), client.UnsafeDisableDeepCopy)).NotTo(gomega.Succeed())
	}

	// Positive control of the other kinds: a ConfigMap change rolls all three.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	for _, obj := range objs {
		g.Eventually(func() []string { return rolledEvents(t, ns, obj.GetName()) }).Should(gomega.HaveLen(1), "%s rolled", obj.GetName())
	}
	cur := get(t, objs[0].(*appsv1.Deployment))
	g.Expect(cur.Spec.Template.Spec.Containers[0].Image).NotTo(gomega.BeEmpty(), "the API server's Deployment keeps its image")
}
