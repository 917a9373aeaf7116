package controller

import (
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/index"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// namesOf returns the sorted "namespace/name" of each request.
func namesOf(reqs []reconcile.Request) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// Issue #36: the map functions read the workloads a ConfigMap change
// reaches from the informer's reference index itself
// (index.CachedByField), without decoding one. What they find must be
// what a List of the cache (which decodes each) finds, for every lookup
// they make: in the object's namespace by name, by pattern (any name),
// across namespaces (Wave's extra lists), the pod-reloader dialect's
// writes, and a namespace's workloads. The index's naming is
// controller-runtime's, not ours: a change of it fails here.
func TestCachedByField_FindsWhatAListOfTheCacheFinds(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, other := newNamespace(t), newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(other, "shared", map[string]string{"a": "1"}))
	spec := podSpec(envFrom("cfg"))
	create(t,
		deployment(ns, "web-1", reloaderAutoOn, spec),
		deployment(ns, "web-2", reloaderAutoOn, spec),
		deployment(ns, "web-3", reloaderAutoOn, spec),
		deployment(ns, "unrelated", reloaderAutoOn, podSpec(envFrom("elsewhere"))),
		deployment(ns, "off", nil, spec),
		deployment(ns, "wave", map[string]string{annotation.WaveUpdate: "true", annotation.WaveExtraConfigMaps: other + "/shared"}, podSpec()),
		deployment(ns, "pod-reloader", map[string]string{annotation.PodReloaderConfigMaps: "cfg"}, podSpec()),
		statefulSet(ns, "db", reloaderAutoOn, spec),
		daemonSet(ns, "agent", reloaderAutoOn, spec),
	)
	opts := Options{PlanOptions: plan.Options{AllowCrossNamespaceReferences: true}}
	// One informer for the whole cache, as cmd/reroll runs without
	// --namespaces (startReroll's cache is one per namespace), held to
	// ns by a field selector, so that this Reroll leaves the other tests'
	// workloads alone.
	rr := startRerollWith(t, plane.Config, ns, opts, func(mo *ctrl.Options) {
		mo.Cache.DefaultNamespaces = nil
		mo.Cache.DefaultFieldSelector = fields.OneTermEqualSelector("metadata.namespace", ns)
		// Namespaces have no metadata.namespace (scope.CacheOptions).
		mo.Cache.ByObject[&corev1.Namespace{}] = cache.ByObject{Field: fields.Everything()}
	})
	reader, err := client.New(plane.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: rr.cache}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cm := configMap(ns, "cfg", nil)
	shared := configMap(other, "shared", nil)
	nsObj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	want := map[string]struct {
		cfg, shared, inNamespace []string
	}{
		"Deployment":  {cfg: []string{ns + "/pod-reloader", ns + "/web-1", ns + "/web-2", ns + "/web-3"}, shared: []string{ns + "/wave"}, inNamespace: []string{ns + "/off", ns + "/pod-reloader", ns + "/unrelated", ns + "/wave", ns + "/web-1", ns + "/web-2", ns + "/web-3"}},
		"StatefulSet": {cfg: []string{ns + "/db"}, shared: []string{}, inNamespace: []string{ns + "/db"}},
		"DaemonSet":   {cfg: []string{ns + "/agent"}, shared: []string{}, inNamespace: []string{ns + "/agent"}},
	}
	for _, k := range workload.Builtin() {
		// The same reconciler reading the index (informers) and listing.
		fast := &WorkloadReconciler{Kind: k, Client: reader, informers: rr.cache, Options: opts}
		listed := &WorkloadReconciler{Kind: k, Client: reader, Options: opts}
		w := want[k.Name()]
		// What the lookups find once the cache holds every workload.
		g.Eventually(func() []string { return namesOf(listed.requestsFor(reference.ConfigMap)(t.Context(), cm)) }).Should(gomega.Equal(w.cfg), k.Name())
		g.Expect(namesOf(fast.requestsFor(reference.ConfigMap)(t.Context(), cm))).To(gomega.Equal(w.cfg), "%s: by name, from the index", k.Name())
		g.Expect(namesOf(fast.requestsFor(reference.ConfigMap)(t.Context(), shared))).To(gomega.Equal(w.shared), "%s: across namespaces, from the index", k.Name())
		g.Expect(namesOf(listed.requestsFor(reference.ConfigMap)(t.Context(), shared))).To(gomega.Equal(w.shared), "%s: across namespaces, listed", k.Name())
		g.Expect(namesOf(fast.requestsInNamespace(t.Context(), nsObj))).To(gomega.Equal(w.inNamespace), "%s: a namespace's, from the index", k.Name())
		g.Expect(namesOf(listed.requestsInNamespace(t.Context(), nsObj))).To(gomega.Equal(w.inNamespace), "%s: a namespace's, listed", k.Name())
		podReloader := k.Name() == "Deployment"
		for _, r := range []*WorkloadReconciler{fast, listed} {
			g.Expect(r.anyWriteMatters(t.Context(), reference.ConfigMap, cm)).To(gomega.Equal(podReloader), "%s: any write of cfg matters", k.Name())
			g.Expect(r.anyWriteMatters(t.Context(), reference.ConfigMap, configMap(ns, "elsewhere", nil))).To(gomega.BeFalse(), "%s: no write of elsewhere matters", k.Name())
		}

		// The index was read, not listed: its objects are the compact
		// ones the informer holds.
		objs, ok, err := index.CachedByField(t.Context(), rr.cache, k.New(), index.References, ns, index.Consumer(reference.ConfigMap, "cfg"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeTrue(), "%s: a cache of all namespaces has an indexer to read", k.Name())
		g.Expect(objs).To(gomega.HaveLen(len(w.cfg)))
		for _, o := range objs {
			g.Expect(o).To(gomega.BeAssignableToTypeOf(&compact.Workload{}), "%s: neither copied nor decoded", k.Name())
		}
		objs, ok, err = index.CachedByField(t.Context(), rr.cache, k.New(), index.References, "", index.Consumer(reference.ConfigMap, "cfg"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeTrue())
		g.Expect(objs).To(gomega.HaveLen(len(w.cfg)), "%s: the all-namespaces value", k.Name())
	}
}

// The cache of one or several namespaces (--namespaces) wraps one informer
// per namespace and gives no indexer to read: the lookups list (and
// decode) there, and find the same (every other test of this suite runs
// with such a cache).
func TestCachedByField_ACacheOfNamespacesIsListed(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), deployment(ns, "web", reloaderAutoOn, podSpec(envFrom("cfg"))))
	rr := startReroll(t, ns, Options{})
	reader, err := client.New(plane.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: rr.cache}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, ok, err := index.CachedByField(t.Context(), rr.cache, workload.Deployment{}.New(), index.References, ns, index.Consumer(reference.ConfigMap, "cfg"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse())
	r := &WorkloadReconciler{Kind: workload.Deployment{}, Client: reader, informers: rr.cache}
	g.Eventually(func() []reconcile.Request {
		return r.requestsFor(reference.ConfigMap)(t.Context(), configMap(ns, "cfg", nil))
	}).Should(gomega.Equal([]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}}))
}
