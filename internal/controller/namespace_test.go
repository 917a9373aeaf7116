package controller

import (
	"context"
	"reflect"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// startCache starts a cache with Reroll's default options (every
// namespace, as cmd/reroll without --namespaces) until the test ends.
func startCache(tb testing.TB) cache.Cache {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	o := Options{}.ManagerOptions().Cache
	o.Scheme = scheme
	c, err := cache.New(plane.Config, o)
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("cache did not sync")
	}
	return c
}

// TestNamespaceAnnotations_ReadsTheCachedNamespaceWithoutACopy reads a
// Namespace's annotations through a cache with Reroll's default options,
// as each reconcile does: they are the API server's, two reads share one
// map (no copy), and a change on the API server reaches the next read while
// the map read before keeps what it held (the cache replaces its object;
// nothing wrote into it). With --namespaces, controller-runtime's
// multi-namespace cache drops the option for cluster-scoped objects and
// copies, as before.
func TestNamespaceAnnotations_ReadsTheCachedNamespaceWithoutACopy(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Annotations = map[string]string{plan.MaxConcurrentRolloutsAnnotation: "2"}
	})
	c := startCache(t)
	read := func() map[string]string {
		a, err := scope.NamespaceAnnotations(t.Context(), c, ns)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return a
	}
	g.Eventually(read).Should(gomega.HaveKeyWithValue(plan.MaxConcurrentRolloutsAnnotation, "2"))
	first := read()
	g.Expect(reflect.ValueOf(read()).UnsafePointer()).To(gomega.Equal(reflect.ValueOf(first).UnsafePointer()), "two reads share the cached map")

	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Annotations[plan.MaxConcurrentRolloutsAnnotation] = "3"
	})
	g.Eventually(read).Should(gomega.HaveKeyWithValue(plan.MaxConcurrentRolloutsAnnotation, "3"))
	g.Expect(first).To(gomega.HaveKeyWithValue(plan.MaxConcurrentRolloutsAnnotation, "2"))
	g.Expect(read()).To(gomega.Equal(get(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}).Annotations))
}

// BenchmarkNamespaceAnnotations reads a Namespace's annotations from a
// started cache with Reroll's default options, as each reconcile does.
func BenchmarkNamespaceAnnotations(b *testing.B) {
	if plane == nil {
		b.Skip("needs the control plane")
	}
	c := startCache(b)
	ctx := context.Background()
	if _, err := scope.NamespaceAnnotations(ctx, c, "default"); err != nil { // starts the informer, waits for it
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scope.NamespaceAnnotations(ctx, c, "default"); err != nil {
			b.Fatal(err)
		}
	}
}
