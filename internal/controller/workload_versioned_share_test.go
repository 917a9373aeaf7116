package controller

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// configMapCreates is how many ConfigMaps the counted client created
// (201 answers to a POST).
func configMapCreates(c *metrics.RequestCounter) int64 {
	return c.Counts()[metrics.Request{Verb: "create", Resource: "configmaps", Code: http.StatusCreated}]
}

// configMapPosts is how many ConfigMap creates the counted client tried,
// whatever the answer (an AlreadyExists too).
func configMapPosts(c *metrics.RequestCounter) int64 {
	var n int64
	for r, v := range c.Counts() {
		if r.Verb == "create" && r.Resource == "configmaps" {
			n += v
		}
	}
	return n
}

// TestVersionedCopy_SharedByAFanOutIsCreatedOnceAndCollectedAfterItsWorkloads:
// the versioned Deployments of a namespace that read one ConfigMap share
// one copy per content: one create for all of them, none for a workload
// that comes later, and no owner references. Deleting a workload gets a
// copy only it used collected (by the copies' garbage collection, as
// Kubernetes deletes its ReplicaSets and pods), while a copy shared with a
// surviving workload stays; once its last workload is deleted, it goes
// too.
func TestVersionedCopy_SharedByAFanOutIsCreatedOnceAndCollectedAfterItsWorkloads(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 133)
	counter := metrics.NewRequestCounter()

	shared := configMap(ns, "app-config", map[string]string{"color": "blue"})
	solo := configMap(ns, "solo-config", map[string]string{"size": "s"})
	create(t, shared, solo)
	var sharers []*appsv1.Deployment
	for i := range 6 {
		d := deployment(ns, fmt.Sprintf("web-%d", i), versionedOn, podSpec(envFrom("app-config")))
		sharers = append(sharers, d)
		create(t, d)
	}
	lone := deployment(ns, "lone", versionedOn, podSpec(envFrom("solo-config")))
	create(t, lone)
	startCountedRerollWith(t, counter, ns, Options{PlanOptions: plan.Options{Key: key}})

	// First sight pins every workload: two copies, one per source.
	blue := copyName(key, ns, "app-config", map[string]string{"color": "blue"})
	soloCopy := copyName(key, ns, "solo-config", map[string]string{"size": "s"})
	for _, d := range sharers {
		g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{blue}), d.Name)
	}
	g.Eventually(func() []string { return templateNames(&get(t, lone).Spec.Template) }).Should(gomega.Equal([]string{soloCopy}))
	g.Expect(configMapCreates(counter)).To(gomega.Equal(int64(2)))
	g.Expect(metrics.CopiesCreatedCount("ConfigMap", ns)).To(gomega.Equal(2.0))

	// A change of the shared source: every sharer rolls onto one new copy,
	// created once.
	update(t, shared, func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"color": "green"} })
	green := copyName(key, ns, "app-config", map[string]string{"color": "green"})
	for _, d := range sharers {
		g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{green}), d.Name)
	}
	g.Expect(configMapCreates(counter)).To(gomega.Equal(int64(3)))

	// A workload that comes later shares the copy from the store: not even
	// a create that fails.
	posts := configMapPosts(counter)
	late := deployment(ns, "late", versionedOn, podSpec(envFrom("app-config")))
	create(t, late)
	g.Eventually(func() []string { return templateNames(&get(t, late).Spec.Template) }).Should(gomega.Equal([]string{green}))
	g.Expect(configMapPosts(counter)).To(gomega.Equal(posts))
	g.Expect(configMapCreates(counter)).To(gomega.Equal(int64(3)))
	g.Expect(metrics.CopiesCreatedCount("ConfigMap", ns)).To(gomega.Equal(3.0))
	for _, name := range []string{blue, green, soloCopy} {
		c := get(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		g.Expect(c.OwnerReferences).To(gomega.BeEmpty(), name)
	}
	for req, n := range counter.Counts() {
		if req.Resource == "configmaps" {
			t.Logf("requests %s %s %d: %d", req.Verb, req.Resource, req.Code, n)
		}
	}

	// Delete the lone workload and all sharers but one (as kubectl does:
	// background propagation).
	waitRolledOut(t, lone)
	for _, d := range append([]*appsv1.Deployment{lone, late}, sharers[1:]...) {
		g.Expect(k8s.Delete(t.Context(), d, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	}
	soloObj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: soloCopy}}
	soloObj.UID = get(t, soloObj).UID
	g.Eventually(func() bool { return exists(t, soloObj) }, pinGCWait, time.Second).Should(gomega.BeFalse(), "the copy only the deleted workload used is collected")
	// The same pass kept the copies the surviving sharer names (its
	// template the green one, its older ReplicaSet the blue one).
	for _, name := range []string{blue, green} {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		g.Expect(exists(t, get(t, c))).To(gomega.BeTrue(), name)
	}
	g.Expect(metrics.CopiesDeletedCount("ConfigMap", ns)).To(gomega.Equal(1.0))

	// The last sharer goes: so do its copies.
	g.Expect(k8s.Delete(t.Context(), sharers[0], client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	g.Eventually(func() int { return len(copiesOf(t, ns, "app-config")) }, pinGCWait, time.Second).Should(gomega.BeZero())
	g.Expect(get(t, shared).Data).To(gomega.Equal(map[string]string{"color": "green"}), "the source is never written nor collected")
}

// TestVersionedCopy_OptInPinsRestartABoundedNumberAtOnce: a namespace of
// versioned Deployments seen for the first time (versioned config turned on
// over a running cluster) is pinned, and so restarted, a few at a time:
// without --max-concurrent-rollouts, at most the namespace's share of
// plan.DefaultOptInPins roll at once; every one is pinned in the end.
func TestVersionedCopy_OptInPinsRestartABoundedNumberAtOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 134)
	create(t, configMap(ns, "app-config", map[string]string{"color": "blue"}))
	var ds []*appsv1.Deployment
	for i := range 12 {
		d := deployment(ns, fmt.Sprintf("web-%d", i), versionedOn, podSpec(envFrom("app-config")))
		ds = append(ds, d)
		create(t, d)
	}
	for _, d := range ds {
		waitRolledOut(t, d)
	}
	blue := copyName(key, ns, "app-config", map[string]string{"color": "blue"})
	// rolling counts the pinned Deployments whose pods are not all on the
	// pinned template yet, read from their ReplicaSets: one on the pinned
	// template with every replica available, and no other with a replica,
	// is a rollout done. (Not from the Deployment's generation: Reroll's
	// own annotation write after a rollout bumps it too, and the status
	// lags it for a moment with no rollout running.)
	rolling := func() (pinned, rolling int) {
		var list appsv1.DeploymentList
		g.Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
		var sets appsv1.ReplicaSetList
		g.Expect(k8s.List(t.Context(), &sets, client.InNamespace(ns))).To(gomega.Succeed())
		for _, d := range list.Items {
			if names := templateNames(&d.Spec.Template); len(names) != 1 || names[0] != blue {
				continue
			}
			pinned++
			done, others := false, false
			for _, rs := range sets.Items {
				if !metav1.IsControlledBy(&rs, &d) {
					continue
				}
				names := templateNames(&rs.Spec.Template)
				onBlue := len(names) == 1 && names[0] == blue
				switch {
				case onBlue && rs.Status.Replicas == *d.Spec.Replicas && rs.Status.AvailableReplicas == *d.Spec.Replicas:
					done = true
				case !onBlue && rs.Status.Replicas > 0:
					others = true
				}
			}
			if !done || others {
				rolling++
			}
		}
		return pinned, rolling
	}
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})

	most := 0
	g.Eventually(func() int {
		pinned, n := rolling()
		most = max(most, n)
		return pinned
	}, 3*time.Minute, 50*time.Millisecond).Should(gomega.Equal(len(ds)))
	bound := plan.NamespaceShare(plan.DefaultOptInPins)
	t.Logf("at most %d of %d Deployments rolled at once (bound %d)", most, len(ds), bound)
	g.Expect(most).To(gomega.BeNumerically(">=", 1), "the sampling saw rollouts")
	g.Expect(most).To(gomega.BeNumerically("<=", bound))
	g.Expect(len(ds)).To(gomega.BeNumerically(">", bound), "more workloads than the bound: the bound is what held them")
}

// TestVersionedCopy_SharingACopyWithOwnersRemovesThem: a copy that an older
// Reroll made with its workload as owner loses its owners when a workload
// shares it, so that Kubernetes' garbage collector does not delete it with
// that first owner while the sharer names it.
func TestVersionedCopy_SharingACopyWithOwnersRemovesThem(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 135)
	src := configMap(ns, "app-config", map[string]string{"color": "blue"})
	first := deployment(ns, "first", nil, podSpec())
	create(t, src, first)
	built, err := pin.Build(key, src)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	old := built.(*corev1.ConfigMap)
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: first.Name, UID: get(t, first).UID}}
	create(t, old)
	sharer := deployment(ns, "sharer", versionedOn, podSpec(envFrom("app-config")))
	create(t, sharer)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})

	g.Eventually(func() []string { return templateNames(&get(t, sharer).Spec.Template) }).Should(gomega.Equal([]string{old.Name}))
	g.Eventually(func() []metav1.OwnerReference { return get(t, old).OwnerReferences }).Should(gomega.BeEmpty())
	// Its first owner goes: the copy stays, named by the sharer.
	g.Expect(k8s.Delete(t.Context(), first, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	g.Eventually(func() bool { return exists(t, first) }).Should(gomega.BeFalse())
	g.Consistently(func() bool { return exists(t, old) }, 10*time.Second, time.Second).Should(gomega.BeTrue())
}

// TestVersionedCopy_UnderAResourceLabelSelectorIsSharedAndCollected: with
// --resource-label-selector, a copy carries its source's values of the
// selector's label keys (and no other label of the source), so it is in
// Reroll's store like its source: a later workload shares it with no
// create, and once no workload names it, it is collected.
func TestVersionedCopy_UnderAResourceLabelSelectorIsSharedAndCollected(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 135)
	counter := metrics.NewRequestCounter()

	src := configMap(ns, "app-config", map[string]string{"color": "blue"})
	src.Labels = map[string]string{"team": "web", "app.kubernetes.io/instance": "web-prod"}
	create(t, src)
	first := deployment(ns, "first", versionedOn, podSpec(envFrom("app-config")))
	create(t, first)
	sel, err := labels.Parse("team in (web, api)")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	startCountedRerollWith(t, counter, ns, Options{PlanOptions: plan.Options{Key: key}, Scope: scope.Scope{ResourceSelector: sel}})

	blue := copyName(key, ns, "app-config", map[string]string{"color": "blue"})
	g.Eventually(func() []string { return templateNames(&get(t, first).Spec.Template) }).Should(gomega.Equal([]string{blue}))
	c := get(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: blue}})
	g.Expect(c.Labels).To(gomega.HaveKeyWithValue("team", "web"), "the selector's key is carried")
	g.Expect(c.Labels).To(gomega.HaveKeyWithValue(pin.LabelCopyOf, pin.SourceLabelValue("app-config")))
	g.Expect(c.Labels).NotTo(gomega.HaveKey("app.kubernetes.io/instance"), "no other label of the source")
	g.Expect(configMapCreates(counter)).To(gomega.Equal(int64(1)))

	// A later workload shares the copy from the store: no create at all.
	posts := configMapPosts(counter)
	late := deployment(ns, "late", versionedOn, podSpec(envFrom("app-config")))
	create(t, late)
	g.Eventually(func() []string { return templateNames(&get(t, late).Spec.Template) }).Should(gomega.Equal([]string{blue}))
	g.Expect(configMapPosts(counter)).To(gomega.Equal(posts))

	// Both workloads go: the copy is collected.
	c.UID = get(t, c).UID
	for _, d := range []*appsv1.Deployment{first, late} {
		g.Expect(k8s.Delete(t.Context(), d, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	}
	g.Eventually(func() bool { return exists(t, c) }, pinGCWait, time.Second).Should(gomega.BeFalse(), "the copy is collected")
	g.Expect(get(t, src).Data).To(gomega.Equal(map[string]string{"color": "blue"}))
}
