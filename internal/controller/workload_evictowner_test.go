package controller

import (
	"context"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/workload"
)

// podSetKind is a custom pod owner with no pod template, like Strimzi's
// StrimziPodSet.
var podSetKind = workload.PodOwner{GVK: schema.GroupVersionKind{Group: "test.reroll.dev", Version: "v1", Kind: "PodSet"}}

// runPodSet creates a PodSet of replicas pods labelled labels that read
// ConfigMap cfg, and a tiny controller for it that creates a pod whenever
// fewer than replicas of its pods run, as an operator would.
func runPodSet(t *testing.T, ns, name string, replicas int, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	installCRD(t, looseCRD("test.reroll.dev", "PodSet", "podsets"))
	return runPodOwner(t, podSetKind.GVK, ns, name, replicas, labels, autoOn, nil)
}

// runPodOwner creates an object of the (installed) kind gvk annotated
// annotations, with spec.replicas and spec.selector, and runs a tiny
// controller for it that creates a pod, annotated podAnnotations, whenever
// fewer than replicas of its pods run.
func runPodOwner(t *testing.T, gvk schema.GroupVersionKind, ns, name string, replicas int, labels, annotations, podAnnotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	g := newT(t)
	ps := workload.PodOwner{GVK: gvk}.New().(*unstructured.Unstructured)
	ps.SetNamespace(ns)
	ps.SetName(name)
	ps.SetAnnotations(annotations)
	selector := map[string]any{}
	for k, v := range labels {
		selector[k] = v
	}
	ps.Object["spec"] = map[string]any{"replicas": int64(replicas), "selector": map[string]any{"matchLabels": selector}}
	g.Expect(k8s.Create(t.Context(), ps)).To(gomega.Succeed())

	owner := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: ps.GetUID(), Controller: ptr.To(true)}
	var mu sync.Mutex
	ensure := func() {
		// The informer's handler and the first call below must not both
		// create the missing pods.
		mu.Lock()
		defer mu.Unlock()
		var list corev1.PodList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return
		}
		running := 0
		for _, p := range list.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == ps.GetUID() && p.DeletionTimestamp == nil && hasAll(p.Annotations, podAnnotations) {
				running++
			}
		}
		for ; running < replicas; running++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: labels, Annotations: podAnnotations, OwnerReferences: []metav1.OwnerReference{owner}},
				Spec:       podSpec(envFrom("cfg")),
			}
			_ = k8s.Create(context.Background(), pod)
		}
	}
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	inf, err := c.GetInformer(t.Context(), &corev1.Pod{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { ensure() },
		DeleteFunc: func(any) { ensure() },
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Start(ctx) }()
	t.Cleanup(cancel)
	g.Expect(c.WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	ensure()
	return ps
}

func TestEviction_RestartsPodsOfAnEvictOwnerButNeverABarePod(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	labels := labelsFor("kafka")
	l := watchPods(t, ns, labels)
	ps := runPodSet(t, ns, "kafka", 2, labels)
	// A pod with the same labels and data, owned by nothing.
	lonely := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lonely", Labels: labels}, Spec: podSpec(envFrom("cfg"))}
	create(t, lonely)
	live := l.allReady(t, 3)
	var old []types.UID
	for _, uid := range live {
		if uid != lonely.UID {
			old = append(old, uid)
		}
	}
	startReroll(t, ns, Options{PodEviction: true, EvictOwners: []workload.PodOwner{podSetKind}})
	recorded(t, ps)

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })

	// Positive: the PodSet's pods are replaced, each evicted once.
	g.Eventually(func() []types.UID {
		_, _, deleted, _ := l.state()
		return keys(deleted)
	}).Should(gomega.ConsistOf(old))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "kafka", ReasonEvicted) }).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "kafka", ReasonEvicting)).To(gomega.ConsistOf(gomega.HavePrefix("Evicting 2 pods after ConfigMap/cfg changed keys k")))
	// The replacement pods become ready after the Evicted Event (CI saw 2).
	g.Eventually(func() int { _, ready, _, _ := l.state(); return ready }).Should(gomega.Equal(3))
	live, _, deleted, _ := l.state()
	g.Expect(live).To(gomega.ContainElement(lonely.UID), "the bare pod still runs")
	g.Expect(deleted).NotTo(gomega.HaveKey(lonely.UID), "the bare pod was never evicted")
	g.Expect(eventsWithReason(t, ns, "kafka", ReasonNotEvicted)).To(gomega.ConsistOf(gomega.HavePrefix("Not evicting pod lonely: it has no owner")))
}

// hasAll reports whether m has every key of want with its value.
func hasAll(m, want map[string]string) bool {
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
