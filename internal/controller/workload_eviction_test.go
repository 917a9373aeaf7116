package controller

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/metrics"
)

// podLog follows the pods of one namespace through an informer, as a user
// watching `kubectl get pods -w` would: which pods were evicted (or
// deleted), and the fewest Ready pods seen at any moment once armed.
type podLog struct {
	mu sync.Mutex
	// pods are the pods that exist, by UID.
	pods map[types.UID]*corev1.Pod
	// deleted are the UIDs of the pods seen terminating or deleted, with
	// how many times each was seen going (a UID goes once).
	deleted map[types.UID]int
	// armed is set once the minimum is being tracked; minReady is the
	// fewest Ready, non-terminating pods matching selector seen since.
	armed    bool
	minReady int
	selector map[string]string
	// order names the pods in the order they were seen going, as
	// "name uid".
	order []string
}

// watchPods starts a podLog on namespace ns for the pods with labels sel.
func watchPods(t *testing.T, ns string, sel map[string]string) *podLog {
	t.Helper()
	g := newT(t)
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	l := &podLog{pods: map[types.UID]*corev1.Pod{}, deleted: map[types.UID]int{}, selector: sel}
	inf, err := c.GetInformer(t.Context(), &corev1.Pod{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.saw(o, false) },
		UpdateFunc: func(_, o any) { l.saw(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			l.saw(o, true)
		},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Start(ctx) }()
	t.Cleanup(cancel)
	g.Expect(c.WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	return l
}

func (l *podLog) saw(o any, gone bool) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, known := l.pods[p.UID]
	wasGoing := known && l.pods[p.UID].DeletionTimestamp != nil
	if gone {
		delete(l.pods, p.UID)
	} else {
		l.pods[p.UID] = p
	}
	if (gone && !wasGoing && known) || (!gone && p.DeletionTimestamp != nil && !wasGoing) {
		l.deleted[p.UID]++
		l.order = append(l.order, p.Name+" "+string(p.UID))
	}
	if l.armed {
		l.minReady = min(l.minReady, l.readyLocked())
	}
}

func (l *podLog) readyLocked() int {
	n := 0
	for _, p := range l.pods {
		if p.DeletionTimestamp == nil && podReady(p) && matches(p.Labels, l.selector) {
			n++
		}
	}
	return n
}

// arm starts tracking the fewest Ready pods from now.
func (l *podLog) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed, l.minReady = true, l.readyLocked()
}

// state returns the UIDs of the pods matching the selector that exist and
// are not terminating, how many are Ready, the deleted UIDs with counts, and
// the fewest Ready seen.
func (l *podLog) state() (live []types.UID, ready int, deleted map[types.UID]int, minReady int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid, p := range l.pods {
		if p.DeletionTimestamp == nil && matches(p.Labels, l.selector) {
			live = append(live, uid)
		}
	}
	deleted = map[types.UID]int{}
	for k, v := range l.deleted {
		deleted[k] = v
	}
	return live, l.readyLocked(), deleted, l.minReady
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// allReady waits until n pods of l are Ready and returns their UIDs.
func (l *podLog) allReady(t *testing.T, n int) []types.UID {
	t.Helper()
	var live []types.UID
	newT(t).Eventually(func() int {
		var ready int
		live, ready, _, _ = l.state()
		if len(live) != n {
			return -1
		}
		return ready
	}).Should(gomega.Equal(n))
	return live
}

// evictDeployment is a Deployment of replicas pods, opted in, restarted by
// eviction, reading ConfigMap cfg; created with field manager
// "my-operator", as an operator that generates it would.
func evictDeployment(t *testing.T, ns, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	d := deployment(ns, name, annotations, podSpec(envFrom("cfg")))
	d.Spec.Replicas = ptr.To(replicas)
	newT(t).Expect(k8s.Create(t.Context(), d, client.FieldOwner("my-operator"))).To(gomega.Succeed())
	return d
}

var evictOn = map[string]string{"reroll.dev/auto": "true", eviction.RestartAnnotation: eviction.RestartEvict}

// expectReplacedOnce waits until every pod of old is gone and want Ready
// pods, all new, run; it then checks that exactly the old pods were
// evicted, each once.
func expectReplacedOnce(t *testing.T, l *podLog, old []types.UID, want int) {
	t.Helper()
	g := newT(t)
	g.Eventually(func() int {
		live, ready, _, _ := l.state()
		if ready != want || len(live) != want {
			return -1
		}
		n := 0
		for _, uid := range live {
			if slices.Contains(old, uid) {
				n++
			}
		}
		return n
	}).Should(gomega.Equal(0), "want %d Ready pods, none of them old", want)
	_, _, deleted, _ := l.state()
	wantDeleted := map[types.UID]int{}
	for _, uid := range old {
		wantDeleted[uid] = 1
	}
	g.Expect(deleted).To(gomega.Equal(wantDeleted), "exactly the pods that read the old data were evicted, each once")
}

func TestEviction_ReplacesPodsOneAtATime(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	d := evictDeployment(t, ns, "web", 3, evictOn)
	l := watchPods(t, ns, labelsFor("web"))
	old := l.allReady(t, 3)
	startReroll(t, ns, Options{PodEviction: true})
	recorded(t, d)

	l.arm()
	evictedBefore := metrics.EvictionCount("Deployment", metrics.EvictionEvicted)
	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })

	expectReplacedOnce(t, l, old, 3)
	_, _, _, minReady := l.state()
	g.Expect(minReady).To(gomega.Equal(2), "one pod at a time: never fewer than 2 of 3 Ready")
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonEvicted) }).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "web", ReasonEvicting)).To(gomega.ConsistOf(gomega.HavePrefix("Evicting 3 pods after ConfigMap/cfg changed keys k")))
	g.Expect(get(t, d).Spec.Template.Annotations).NotTo(gomega.HaveKey("reroll.dev/config-hash"), "the pod template is left alone")
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(eviction.ProgressAnnotation), "the record is removed when done")
	g.Expect(metrics.EvictionCount("Deployment", metrics.EvictionEvicted) - evictedBefore).To(gomega.BeEquivalentTo(3))
}

func TestEviction_PodDisruptionBudgetBlocksUntilRelaxed(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: labelsFor("web")},
		},
	}
	create(t, pdb)
	d := evictDeployment(t, ns, "web", 2, evictOn)
	l := watchPods(t, ns, labelsFor("web"))
	old := l.allReady(t, 2)
	// The disruption controller has counted the pods: the budget allows
	// no disruption.
	g.Eventually(func() int32 { return get(t, pdb).Status.CurrentHealthy }).Should(gomega.BeEquivalentTo(2))
	blockedBefore := metrics.EvictionBlockedSeconds("Deployment")
	startReroll(t, ns, Options{PodEviction: true})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonEvictionBlocked) }).
		Should(gomega.ContainElement(gomega.ContainSubstring("blocked by PodDisruptionBudget web-budget")))
	g.Expect(get(t, d).Annotations[eviction.ProgressAnnotation]).To(gomega.ContainSubstring(`"blockedSince"`))
	_, _, deleted, _ := l.state()
	g.Expect(deleted).To(gomega.BeEmpty(), "no pod is evicted while the budget refuses")

	update(t, pdb, func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1)) })
	expectReplacedOnce(t, l, old, 2)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonEvicted) }).Should(gomega.HaveLen(1))
	g.Expect(metrics.EvictionBlockedSeconds("Deployment")).To(gomega.BeNumerically(">", blockedBefore))
}

func TestEviction_ResumesAfterRestartWithoutEvictingTwice(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	d := evictDeployment(t, ns, "web", 3, evictOn)
	l := watchPods(t, ns, labelsFor("web"))
	old := l.allReady(t, 3)
	first := startReroll(t, ns, Options{PodEviction: true})
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	// Kill Reroll as soon as the first pod is evicted.
	g.Eventually(func() int {
		_, _, deleted, _ := l.state()
		return len(deleted)
	}).Should(gomega.BeNumerically(">=", 1))
	first.stop(t)
	progress, err := eviction.ParseProgress(get(t, d).Annotations[eviction.ProgressAnnotation])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// The record names the restart; it may still list the evicted pod, when
	// the kill came between the eviction and the record's update (evicting
	// first is what makes that kill harmless; see evict).
	g.Expect(progress).NotTo(gomega.BeNil(), "the restart under way is recorded on the Deployment")

	startReroll(t, ns, Options{PodEviction: true})
	expectReplacedOnce(t, l, old, 3)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonEvicted) }).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "web", ReasonEvicting)).To(gomega.HaveLen(1), "the restart was resumed, not started over")
}
