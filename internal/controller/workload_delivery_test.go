package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/workload"
)

// deliveryOptions are the options of a Reroll that delivers safely, its
// halt records in namespace own, under a real installation key, as it
// ships; unlike the defaults (5s, 1m, 5s), a short window, bake time and
// recheck, so a test sees every step in seconds (the e2e test of the
// worked example runs the defaults but for the canary's bake time).
func deliveryOptions(t *testing.T, own string, namespaces ...string) Options {
	t.Helper()
	return Options{
		Scope:                   scope.Scope{Namespaces: namespaces},
		ChangeSets:              types.NamespacedName{Namespace: own, Name: "reroll-change-sets"},
		ChangeSetWindow:         2 * time.Second,
		BakeTime:                3 * time.Second,
		HaltAfterFailedRollouts: 1,
		// As every install runs: under a real installation key, which binds
		// each value's digest to its namespace (the zero key binds nothing).
		PlanOptions: plan.Options{Key: testKey(t, 30), Recheck: time.Second},
	}
}

// waveNamespace makes a test namespace in wave.
func waveNamespace(t *testing.T, wave string) string {
	t.Helper()
	ns := newNamespace(t)
	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Annotations = map[string]string{safe.WaveAnnotation: wave}
	})
	return ns
}

// member reads the workload's part of its change set, as a user would
// with kubectl get -o jsonpath.
func member(t *testing.T, d client.Object) safe.Record {
	t.Helper()
	r, err := safe.ParseRecord(plan.Displayed(get(t, d).GetAnnotations(), safe.MemberAnnotation))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return r
}

// pendingReason is the reason in the workload's reroll.dev/pending.
func pendingReason(t *testing.T, d client.Object) string {
	t.Helper()
	// As kubectl reroll shows it: some tests sign under a key of their own.
	return string(plan.DisplayedPendingReason(get(t, d).GetAnnotations()))
}

// replicated creates ConfigMap cfg in every namespace with data, and in
// each a Deployment web of one replica that reads it; it returns them.
func replicated(t *testing.T, data map[string]string, namespaces ...string) []*appsv1.Deployment {
	t.Helper()
	var ds []*appsv1.Deployment
	for _, ns := range namespaces {
		create(t, configMap(ns, "cfg", data))
		d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
		d.Spec.Replicas = ptr.To[int32](1)
		create(t, d)
		ds = append(ds, d)
	}
	return ds
}

// replicate writes data to cfg in every namespace, as a replicator does.
func replicate(t *testing.T, data map[string]string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data = data })
	}
}

// fleet is a canary namespace in wave -1 and a production namespace in
// wave 0, each with ConfigMap cfg (copies of one another) and a Deployment
// web of one replica reading it, rolled out, under a Reroll that delivers
// safely and keeps its halt records in namespace own.
type fleet struct {
	own, canaryNS, prodNS string
	canary, prod          *appsv1.Deployment
	opts                  Options
	reroll                *reroll
}

func newFleet(t *testing.T) fleet {
	t.Helper()
	return newFleetWith(t, nil)
}

// newFleetWith is newFleet with Reroll's options changed by mutate (nil:
// none).
func newFleetWith(t *testing.T, mutate func(*Options)) fleet {
	t.Helper()
	f := fleet{own: newNamespace(t), canaryNS: waveNamespace(t, "-1"), prodNS: waveNamespace(t, "0")}
	ds := replicated(t, map[string]string{"level": "info"}, f.canaryNS, f.prodNS)
	f.canary, f.prod = ds[0], ds[1]
	f.opts = deliveryOptions(t, f.own, f.own, f.canaryNS, f.prodNS)
	if mutate != nil {
		mutate(&f.opts)
	}
	f.reroll = startReroll(t, f.own, f.opts)
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
	}
	return f
}

// failNextCanaryRollout makes the canary's next rollout fail: a deadline
// of 5 s and a quota that refuses its surge pod (blockSurge).
func (f fleet) failNextCanaryRollout(t *testing.T) {
	t.Helper()
	update(t, f.canary, func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](5) })
	waitRolledOut(t, f.canary)
	blockSurge(t, f.canaryNS)
}

func TestDelivery_WavesRollAReplicatedConfigMapCanaryFirst(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	canaryNS, prodNS, canary, prod := f.canaryNS, f.prodNS, f.canary, f.prod

	replicate(t, map[string]string{"level": "debug"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	// The production wave waits: observed held, for its wave, while the
	// canary's rollout has not yet baked.
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldWave))
	g.Expect(rolledEvents(t, prodNS, "web")).To(gomega.BeEmpty())

	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))
	c, p := member(t, canary), member(t, prod)
	g.Expect(c.Sets).To(gomega.Equal(p.Sets), "the copies in both namespaces are one change set")
	g.Expect(c.Healthy.IsZero()).To(gomega.BeFalse(), "the canary was healthy before production rolled")
	g.Expect(p.Rolled).NotTo(gomega.BeTemporally("<", c.Healthy.Add(3*time.Second)), "production rolled only after the canary baked")
	g.Expect(pendingReason(t, prod)).To(gomega.BeEmpty())
	waitRolledOut(t, prod)
	g.Consistently(func() int { return len(rolledEvents(t, canaryNS, "web")) + len(rolledEvents(t, prodNS, "web")) }).Should(gomega.Equal(2), "each rolled once")
}

// A tenant's namespace, which the operator did not place in the order (no
// wave on its Namespace), holds a copy of the same replicated ConfigMap; its
// workload asks for wave -1000 and its rollout never becomes healthy (a
// quota refuses its surge pod, and its deadline is far away). The canary
// and production, placed by the operator, are one change set, which rolls
// canary first and production after the bake time; the tenant's copy is a
// set of its own, which holds nothing of theirs.
func TestDelivery_ATenantNamespaceHoldsNothingOfTheSharedSet(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, canaryNS, prodNS, tenantNS := newNamespace(t), waveNamespace(t, "-1"), waveNamespace(t, "0"), newNamespace(t)
	ds := replicated(t, map[string]string{"level": "info"}, canaryNS, prodNS, tenantNS)
	canary, prod, tenant := ds[0], ds[1], ds[2]
	update(t, tenant, func(d *appsv1.Deployment) {
		d.Annotations[safe.WaveAnnotation] = "-1000"
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](3600)
	})
	startReroll(t, own, deliveryOptions(t, own, own, canaryNS, prodNS, tenantNS))
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
	}
	blockSurge(t, tenantNS)

	replicate(t, map[string]string{"level": "debug"}, canaryNS, prodNS, tenantNS)
	// The tenant's rollout starts (the lowest wave of its own set) and
	// never completes.
	g.Eventually(func() []string { return rolledEvents(t, tenantNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldWave), "production waits for the canary")
	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1), "and only for the canary")
	c, p, tr := member(t, canary), member(t, prod), member(t, tenant)
	g.Expect(c.Sets).To(gomega.Equal(p.Sets), "the placed namespaces share one change set")
	g.Expect(tr.Sets).NotTo(gomega.Equal(p.Sets), "the tenant's copy is a set of its own")
	g.Expect(p.Rolled).NotTo(gomega.BeTemporally("<", c.Healthy.Add(3*time.Second)), "production rolled only after the canary baked")
	g.Expect(tr.Healthy.IsZero()).To(gomega.BeTrue(), "the tenant's rollout never became healthy")
	g.Expect(tr.Wave).To(gomega.Equal(-1000))
	g.Expect(tr.Place).To(gomega.BeZero())
}

func TestDelivery_NoWavesNothingWaits(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, a, b := newNamespace(t), newNamespace(t), newNamespace(t)
	ds := replicated(t, map[string]string{"level": "info"}, a, b)
	startReroll(t, own, deliveryOptions(t, own, own, a, b))
	for _, d := range ds {
		recorded(t, d)
	}
	replicate(t, map[string]string{"level": "debug"}, a, b)
	for _, ns := range []string{a, b} {
		g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	}
	for _, d := range ds {
		g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(safe.MemberAnnotation), "without waves or a bound nothing is tracked")
		g.Expect(eventsWithReason(t, d.Namespace, "web", plan.ReasonDeferred)).To(gomega.BeEmpty())
	}
}

// blockSurge gives ns a ResourceQuota of one pod, so a Deployment of one
// replica cannot create its surge pod: its rollout makes no progress and
// the Deployment controller reports ProgressDeadlineExceeded.
func blockSurge(t *testing.T, ns string) {
	t.Helper()
	create(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-pod"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}})
	newT(t).Eventually(func() corev1.ResourceList {
		q := get(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-pod"}})
		return q.Status.Used
	}).Should(gomega.HaveKeyWithValue(corev1.ResourcePods, resource.MustParse("1")), "the quota counts the running pod")
}

func TestDelivery_AFailedCanaryHaltsTheRestAcrossARestart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	own, canaryNS, prodNS, canary, prod, opts, first := f.own, f.canaryNS, f.prodNS, f.canary, f.prod, f.opts, f.reroll
	f.failNextCanaryRollout(t)
	template := get(t, prod).Spec.Template

	replicate(t, map[string]string{"level": "bad"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() string { return member(t, canary).Failed }).Should(gomega.ContainSubstring("Progress deadline exceeded"))
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(func() []string { return eventsWithReason(t, prodNS, "web", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "web", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "cfg", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	h := haltRecord(t, opts.Key, own, member(t, prod).Sets[0])
	g.Expect(h.Active()).To(gomega.BeTrue())
	g.Expect(h.Failed).To(gomega.ContainElement("Deployment/" + canaryNS + "/web"))

	// A restarted Reroll keeps the halt: production keeps its pods.
	first.stop(t)
	startReroll(t, own, opts)
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, prod).Spec.Template }).Should(gomega.Equal(template))
	g.Expect(pendingReason(t, prod)).To(gomega.Equal(safe.HoldHalted))
	g.Expect(rolledEvents(t, prodNS, "web")).To(gomega.BeEmpty())

	// Positive control: resumed, the held wave rolls, once.
	resumeSet(t, own, member(t, prod).Sets[0])
	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))
	g.Expect(strings.Join(rolledEvents(t, canaryNS, "web"), ";")).To(gomega.ContainSubstring("ConfigMap/cfg"))
}

func TestDelivery_StormBreakerHoldsAFlappingWorkload(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cert", map[string]string{"tls.crt": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cert")))
	create(t, d)
	key := testKey(t, 30)
	rr := startReroll(t, ns, Options{Storm: safe.Storm{Max: 2, Period: time.Hour}, PlanOptions: plan.Options{Key: key, Recheck: time.Second}})
	recorded(t, d)

	// A flapping certificate: the first two changes roll.
	for i, v := range []string{"1", "2"} {
		update(t, configMap(ns, "cert", nil), func(cm *corev1.ConfigMap) { cm.Data["tls.crt"] = v })
		g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(i + 1))
	}
	template := get(t, d).Spec.Template
	update(t, configMap(ns, "cert", nil), func(cm *corev1.ConfigMap) { cm.Data["tls.crt"] = "3" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", safe.ReasonRolloutStorm) }).Should(gomega.HaveLen(1))
	g.Expect(pendingReason(t, d)).To(gomega.Equal(safe.HoldStorm))
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, d).Spec.Template }).Should(gomega.Equal(template))
	// The gauge the chart's alert RerollRolloutStormHeld reads; it counts
	// only state signed under Reroll's key.
	gauges := rollout.NewTracker(0, key, rr.cache, time.Now)
	gauges.Add(rollout.Kind{Kind: workload.Deployment{}, Progress: workload.Deployment{}})
	g.Eventually(func() map[string]float64 { return collect(t, gauges) }).Should(gomega.And(
		gomega.HaveKeyWithValue("reroll_rollouts_held_by_storm", 1.0),
		gomega.HaveKeyWithValue("reroll_rollouts_waiting", 1.0)))

	// Resumed (the annotation removed, as kubectl reroll resume does): the
	// held change rolls, once.
	update(t, d, func(d *appsv1.Deployment) { delete(d.Annotations, safe.RolloutsAnnotation) })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(3))
	g.Expect(pendingReason(t, d)).To(gomega.BeEmpty())
	g.Eventually(func() map[string]float64 { return collect(t, gauges) }).Should(gomega.HaveKeyWithValue("reroll_rollouts_held_by_storm", 0.0))
}

func TestDelivery_OnDeleteStatefulSetRestartsPodByPodHighestOrdinalFirst(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	sts := statefulSet(ns, "db", autoOn, podSpec(envFrom("cfg")))
	sts.Spec.Replicas = ptr.To[int32](3)
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	create(t, sts)
	l := watchPods(t, ns, labelsFor("db"))
	old := l.allReady(t, 3)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: testKey(t, 30)}, PodEviction: true})
	recorded(t, sts)

	l.arm()
	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	// The StatefulSet controller may delete and re-create a replacement
	// itself; Reroll's evictions are the old pods' deletions.
	g.Eventually(func() int {
		live, ready, _, _ := l.state()
		if ready != 3 || len(live) != 3 {
			return -1
		}
		n := 0
		for _, uid := range live {
			if slices.Contains(old, uid) {
				n++
			}
		}
		return n
	}).Should(gomega.Equal(0), "three Ready pods, none of them old")
	_, _, deleted, minReady := l.state()
	for _, uid := range old {
		g.Expect(deleted).To(gomega.HaveKeyWithValue(uid, 1), "each old pod evicted once")
	}
	g.Expect(minReady).To(gomega.Equal(2), "one pod at a time, each replacement Ready before the next")
	l.mu.Lock()
	var order []string
	for _, e := range l.order {
		name, uid, _ := strings.Cut(e, " ")
		if slices.Contains(old, types.UID(uid)) {
			order = append(order, name)
		}
	}
	l.mu.Unlock()
	g.Expect(order).To(gomega.Equal([]string{"db-2", "db-1", "db-0"}), "highest ordinal first")
	g.Eventually(func() map[string]string { return get(t, sts).Annotations }).ShouldNot(gomega.HaveKey(eviction.ProgressAnnotation))
	g.Expect(get(t, sts).Spec.Template.Annotations).NotTo(gomega.HaveKey("reroll.dev/config-hash"), "an OnDelete template change would restart nothing")
}

func TestDelivery_AFixSupersedesAHaltedChangeSet(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	canaryNS, prodNS, canary, prod := f.canaryNS, f.prodNS, f.canary, f.prod
	f.failNextCanaryRollout(t)

	replicate(t, map[string]string{"level": "bad"}, canaryNS, prodNS)
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	bad := member(t, prod).Sets

	// The fix: the quota goes (the cause), and a newer content replaces
	// the bad one everywhere.
	g.Expect(k8s.Delete(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: canaryNS, Name: "one-pod"}})).To(gomega.Succeed())
	// A deadline a loaded machine meets: the fix must not fail by time.
	update(t, canary, func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600) })
	replicate(t, map[string]string{"level": "good"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))
	g.Expect(member(t, prod).Sets).NotTo(gomega.Equal(bad), "production rolled for the new change set")
	g.Expect(member(t, canary).Sets).To(gomega.Equal(member(t, prod).Sets))
	g.Expect(member(t, canary).Healthy.IsZero()).To(gomega.BeFalse(), "the canary rolled the fix, healthy, before production")
	waitRolledOut(t, prod)
	g.Consistently(func() []int {
		return []int{len(rolledEvents(t, canaryNS, "web")), len(rolledEvents(t, prodNS, "web"))}
	}).Should(gomega.Equal([]int{2, 1}), "the canary rolled the bad content and the fix, production only the fix, each once")
	g.Expect(pendingReason(t, prod)).To(gomega.BeEmpty())
}

// With safe delivery on but no wave, no bound and no halt anywhere, a change
// costs what it cost before safe delivery existed: one patch of the
// workload, and not one GET or LIST (the halt records are read from a
// watch, not from the API server per change).
func TestDelivery_NoWavesNoHaltsAChangeCostsOnePatch(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, ns := newNamespace(t), newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"level": "info"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	counter := startCountedReroll(t, own, deliveryOptions(t, own, own, ns))
	recorded(t, d)
	before := settled(t, counter)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["level"] = "debug" })
	// The positive control: the counter sees the rollout's patch.
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	after := settled(t, counter)
	patch := metrics.Request{Verb: "patch", Resource: "deployments", Code: 200}
	g.Expect(after[patch]).To(gomega.Equal(before[patch] + 1))
	for r, n := range after {
		if r.Verb == "get" || r.Verb == "list" {
			g.Expect(n).To(gomega.Equal(before[r]), "%s %s after a data change", r.Verb, r.Resource)
		}
	}
}

// haltRecord reads the halt record of set id in namespace own, as Reroll
// reads it: signed under key k.
func haltRecord(t *testing.T, k digest.Key, own, id string) *safe.Halt {
	t.Helper()
	h, err := halts.Verify(k, get(t, configMap(own, halts.Name("reroll-change-sets", id), nil)))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return h
}

// resumeSet resumes set id as kubectl reroll resume does: the resume of
// its halt written beside its record, now.
func resumeSet(t *testing.T, own, id string) {
	t.Helper()
	update(t, configMap(own, halts.Name("reroll-change-sets", id), nil), func(cm *corev1.ConfigMap) {
		newT(t).Expect(halts.Resume(cm, time.Now())).To(gomega.Succeed())
	})
}

// haltConfigMap is the ConfigMap of a halt record of set id, as Reroll
// writes it under key k.
func haltConfigMap(k digest.Key, own, id string, h safe.Halt) *corev1.ConfigMap {
	return halts.ConfigMap(k, own, "reroll-change-sets", id, h)
}

// The halt records are read from a watch that needs no more than list and
// watch on the ConfigMaps of Reroll's namespace (the chart's Role grants
// them there, and only there): the watch selects the records by their
// label, and ignores every other ConfigMap.
func TestHaltRecords_ReadFromAWatchOfTheirLabel(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own := newNamespace(t)
	cfg := serviceAccountConfig(t, own, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
	})
	key := types.NamespacedName{Namespace: own, Name: "reroll-change-sets"}
	// Writes (never made here) go through the admin's client.
	k := testKey(t, 30)
	records, err := halts.New(cfg, k8s, k8s, key, FieldManager, k)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	go func() { _ = records.Start(t.Context()) }()

	// None: no record, and no error (the watch synced with that permission).
	hs, err := records.Get(t.Context())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(hs).To(gomega.BeEmpty())

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	unlabelled := haltConfigMap(k, own, "set-b", safe.Halt{Halted: at})
	unlabelled.Labels = nil
	create(t, unlabelled, haltConfigMap(k, own, "set-a", safe.Halt{Halted: at}))
	ids := func(g gomega.Gomega) []string {
		hs, err := records.Get(t.Context())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var out []string
		for id, h := range hs {
			if h.Active() {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}
	g.Eventually(ids).Should(gomega.Equal([]string{"set-a"}))
	create(t, haltConfigMap(k, own, "set-c", safe.Halt{Halted: at}))
	g.Eventually(ids).Should(gomega.Equal([]string{"set-a", "set-c"}))
	resumeSet(t, own, "set-a")
	g.Eventually(ids).Should(gomega.Equal([]string{"set-c"}))
}

// A tenant who may edit a workload writes the storm breaker's state by hand:
// two rollouts "just now", under a bound of two, while Reroll is down, and
// the ConfigMap changes. Not signed by Reroll, it holds nothing: Reroll's
// first reconcile sees both, posts a ForgedState Warning and rolls. The
// breaker still holds on Reroll's own signed record (the positive control).
func TestDelivery_ForgedStormStateHoldsNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cert", map[string]string{"tls.crt": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cert")))
	create(t, d)
	opts := Options{PlanOptions: plan.Options{Key: testKey(t, 7), Recheck: time.Second}, Storm: safe.Storm{Max: 2, Period: time.Hour}}
	first := startReroll(t, ns, opts)
	recorded(t, d)
	first.stop(t)

	now := strconv.FormatInt(time.Now().Unix(), 10)
	update(t, d, func(d *appsv1.Deployment) { d.Annotations[safe.RolloutsAnnotation] = now + " " + now })
	update(t, configMap(ns, "cert", nil), func(cm *corev1.ConfigMap) { cm.Data["tls.crt"] = "1" })
	startReroll(t, ns, opts)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonForgedState) }).
		Should(gomega.ContainElement(gomega.ContainSubstring(safe.RolloutsAnnotation)))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1), "the forged rollouts count for nothing")
	g.Expect(eventsWithReason(t, ns, "web", safe.ReasonRolloutStorm)).To(gomega.BeEmpty())

	update(t, configMap(ns, "cert", nil), func(cm *corev1.ConfigMap) { cm.Data["tls.crt"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
	g.Expect(get(t, d).Annotations[safe.RolloutsAnnotation]).To(gomega.ContainSubstring(" sig="), "Reroll signs its own")
	// Positive control: Reroll's two signed rollouts hold the third change.
	update(t, configMap(ns, "cert", nil), func(cm *corev1.ConfigMap) { cm.Data["tls.crt"] = "3" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", safe.ReasonRolloutStorm) }).Should(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(2))
}

// A tenant who may edit the canary writes its change-set record by hand,
// reporting a failed rollout while production waits for the canary's bake
// time. Not signed by Reroll, it halts nothing: a ForgedState Warning, and
// production rolls once the canary has baked.
func TestDelivery_ForgedChangeSetRecordHaltsNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, canaryNS, prodNS := newNamespace(t), waveNamespace(t, "-1"), waveNamespace(t, "0")
	ds := replicated(t, map[string]string{"level": "info"}, canaryNS, prodNS)
	canary, prod := ds[0], ds[1]
	opts := deliveryOptions(t, own, own, canaryNS, prodNS)
	opts.Key = testKey(t, 8)
	// Long enough to forge the record before production may roll.
	opts.BakeTime = 20 * time.Second
	startReroll(t, own, opts)
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
	}

	replicate(t, map[string]string{"level": "debug"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldWave))
	forgedAt := time.Now().Truncate(time.Second)
	update(t, canary, func(d *appsv1.Deployment) {
		r, err := safe.ParseRecord(plan.Displayed(d.Annotations, safe.MemberAnnotation))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(r.Sets).NotTo(gomega.BeEmpty())
		r.Failed = "forged by a tenant"
		d.Annotations[safe.MemberAnnotation] = r.String()
	})
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "web", plan.ReasonForgedState) }).
		Should(gomega.ContainElement(gomega.ContainSubstring(safe.MemberAnnotation)))

	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))
	g.Expect(member(t, prod).Rolled).NotTo(gomega.BeTemporally("<", forgedAt), "production rolled after the forgery was written")
	g.Expect(eventsWithReason(t, prodNS, "web", safe.ReasonChangeHalted)).To(gomega.BeEmpty())
	g.Expect(eventsWithReason(t, canaryNS, "web", safe.ReasonChangeHalted)).To(gomega.BeEmpty())
}

// gauge returns the value of an unlabelled gauge of the process's registry.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	for _, m := range family(t, name) {
		return m.GetGauge().GetValue()
	}
	return -1
}

// The breaker's gauge counts a halted change set while it holds workloads,
// and returns to 0 when an operator resumes it, and when a newer content
// supersedes it. Not parallel: the gauge is process-wide (the latest
// Reroll's halt records).
func TestDelivery_HaltedGaugeCountsHeldSetsUntilResumedOrSuperseded(t *testing.T) {
	g := newT(t)
	f := newFleet(t)
	own, canaryNS, prodNS, canary, prod := f.own, f.canaryNS, f.prodNS, f.canary, f.prod
	halted := func() float64 { return gauge(t, "reroll_change_sets_halted") }
	g.Expect(halted()).To(gomega.BeZero())

	f.failNextCanaryRollout(t)
	replicate(t, map[string]string{"level": "bad"}, canaryNS, prodNS)
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(halted).Should(gomega.Equal(1.0))

	// Resumed: 0, and production rolls.
	resumeSet(t, own, member(t, prod).Sets[0])
	g.Eventually(halted).Should(gomega.BeZero())
	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(1))

	// A second bad content halts again (the quota still blocks the canary).
	replicate(t, map[string]string{"level": "worse"}, canaryNS, prodNS)
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(halted).Should(gomega.Equal(1.0))
	g.Expect(activeHalts(t, own)).To(gomega.Equal(1))

	// The fix supersedes it: 0, and its halt record expires.
	g.Expect(k8s.Delete(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: canaryNS, Name: "one-pod"}})).To(gomega.Succeed())
	update(t, canary, func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600) })
	replicate(t, map[string]string{"level": "good"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.HaveLen(2))
	g.Eventually(halted).Should(gomega.BeZero())
	g.Eventually(func() int { return activeHalts(t, own) }).Should(gomega.BeZero(), "the superseded set's halt record expires")
}

// activeHalts counts the active halt records in namespace own.
func activeHalts(t *testing.T, own string) int {
	t.Helper()
	var list corev1.ConfigMapList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(own), client.MatchingLabelsSelector{Selector: halts.Selector("reroll-change-sets")})).To(gomega.Succeed())
	n := 0
	for i := range list.Items {
		h, err := halts.Read(&list.Items[i])
		newT(t).Expect(err).NotTo(gomega.HaveOccurred())
		if h.Active() {
			n++
		}
	}
	return n
}

// The canary's new pods pass their first check, then crash-loop during the
// bake time (set through the pod's status, as a kubelet would: the pods
// here are kwok's). The rollout counts as failed and halts the change set.
func TestDelivery_ACrashLoopDuringTheBakeTimeHaltsTheRest(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, canaryNS, prodNS := newNamespace(t), waveNamespace(t, "-1"), waveNamespace(t, "0")
	ds := replicated(t, map[string]string{"level": "info"}, canaryNS, prodNS)
	canary, prod := ds[0], ds[1]
	// A bake time far longer than the test needs to break the pod.
	update(t, canary, func(d *appsv1.Deployment) { d.Annotations[safe.BakeTimeAnnotation] = "10m" })
	startReroll(t, own, deliveryOptions(t, own, own, canaryNS, prodNS))
	for _, d := range ds {
		recorded(t, d)
		waitRolledOut(t, d)
	}

	replicate(t, map[string]string{"level": "crash"}, canaryNS, prodNS)
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	// The positive check first: the new revision was healthy, and baking.
	g.Eventually(func() bool { return member(t, canary).Healthy.IsZero() }).Should(gomega.BeFalse())
	g.Expect(pendingReason(t, prod)).To(gomega.Equal(safe.HoldWave))

	var pods corev1.PodList
	g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(canaryNS), client.MatchingLabels(labelsFor("web")))).To(gomega.Succeed())
	crashed := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: metav1.Now()},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: metav1.Now()},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1", RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}}}}
		g.Expect(k8s.Status().Update(t.Context(), p)).To(gomega.Succeed())
		crashed++
	}
	g.Expect(crashed).To(gomega.BeNumerically(">", 0))

	g.Eventually(func() string { return member(t, canary).Failed }).Should(gomega.ContainSubstring("unhealthy during the bake time"))
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "web", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	g.Expect(rolledEvents(t, prodNS, "web")).To(gomega.BeEmpty())
}

// With alerts on (ALERT_ON_RELOAD), a halt is told to the alert endpoint
// once, after the canary's rollout alert (the positive control: the
// endpoint receives what Reroll sends).
func TestDelivery_AHaltIsAlerted(t *testing.T) {
	t.Parallel()
	g := newT(t)
	var mu sync.Mutex
	var got []map[string]any
	var bad error
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			bad = err
			return
		}
		got = append(got, m)
	}))
	t.Cleanup(srv.Close)
	received := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}
	f := newFleetWith(t, func(o *Options) {
		o.Alerter = notify.NewSender(notify.Config{Sink: notify.Webhook, URL: srv.URL})
	})
	f.failNextCanaryRollout(t)
	replicate(t, map[string]string{"level": "bad"}, f.canaryNS, f.prodNS)
	g.Eventually(func() string { return pendingReason(t, f.prod) }).Should(gomega.Equal(safe.HoldHalted))
	id := member(t, f.prod).Sets[0]

	g.Eventually(received).Should(gomega.HaveLen(2))
	g.Consistently(received).Should(gomega.HaveLen(2), "one rollout alert and one halt alert")
	mu.Lock()
	g.Expect(bad).NotTo(gomega.HaveOccurred())
	mu.Unlock()
	rolled, halted := received()[0], received()[1]
	g.Expect(rolled).NotTo(gomega.HaveKey("halt"))
	g.Expect(rolled).To(gomega.HaveKeyWithValue("namespace", f.canaryNS))
	g.Expect(halted).To(gomega.HaveKeyWithValue("kind", "Deployment"))
	g.Expect(halted).To(gomega.HaveKeyWithValue("namespace", f.canaryNS))
	g.Expect(halted).To(gomega.HaveKeyWithValue("name", "web"))
	g.Expect(halted).To(gomega.HaveKeyWithValue("halt", gomega.And(
		gomega.HaveKeyWithValue("changeSet", id),
		gomega.HaveKeyWithValue("failed", []any{"Deployment/" + f.canaryNS + "/web"}))))
	// The changed objects are every copy the set's members read.
	g.Expect(halted["text"]).To(gomega.And(
		gomega.HavePrefix("Reroll halted change set "+id+" ("),
		gomega.ContainSubstring("ConfigMap/cfg changed"),
		gomega.ContainSubstring("ConfigMap/"+f.prodNS+"/cfg changed"),
		gomega.ContainSubstring(") after 1 failed rollout(s): Deployment/"+f.canaryNS+"/web: ")))
}

// One tenant's sets halted many times over, each record as large as
// Reroll writes one (more than the 1 MiB of one ConfigMap in all): another
// set's halt is still recorded, in its own ConfigMap, and told.
func TestDelivery_OneTenantsHaltRecordsLeaveRoomForAnothersHalt(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	long := make([]string, 64)
	for i := range long {
		long[i] = fmt.Sprintf("Deployment/tenant/%0600d", i)
	}
	for i := range 30 {
		h := safe.Halt{Halted: time.Now().UTC().Truncate(time.Second), Failed: long, Objects: long, Signal: strings.Repeat("x", 4096)}.Bounded()
		create(t, haltConfigMap(f.opts.Key, f.own, fmt.Sprintf("tenant%02d", i), h))
	}
	g.Expect(activeHalts(t, f.own)).To(gomega.Equal(30))

	f.failNextCanaryRollout(t)
	replicate(t, map[string]string{"level": "bad"}, f.canaryNS, f.prodNS)
	g.Eventually(func() string { return pendingReason(t, f.prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(func() []string { return eventsWithReason(t, f.canaryNS, "web", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	h := haltRecord(t, f.opts.Key, f.own, member(t, f.prod).Sets[0])
	g.Expect(h.Active()).To(gomega.BeTrue())
	g.Expect(h.Failed).To(gomega.Equal([]string{"Deployment/" + f.canaryNS + "/web"}))
	g.Expect(activeHalts(t, f.own)).To(gomega.Equal(31))
}

// The API refuses the halt record (a quota on ConfigMaps in Reroll's
// namespace, as a full namespace would): the halt still holds production,
// is told with ChangeHalted Events, and is recorded once the API accepts
// it again.
func TestDelivery_AHaltThatCannotBeRecordedStillHoldsAndIsTold(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	var cms corev1.ConfigMapList
	g.Expect(k8s.List(t.Context(), &cms, client.InNamespace(f.own))).To(gomega.Succeed())
	n := resource.MustParse(strconv.Itoa(len(cms.Items)))
	create(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: f.own, Name: "full"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": n}}})
	g.Eventually(func() corev1.ResourceList {
		return get(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: f.own, Name: "full"}}).Status.Used
	}).Should(gomega.HaveKeyWithValue(corev1.ResourceName("count/configmaps"), n), "the quota is in force")
	// The positive control of the quota: it refuses a ConfigMap.
	g.Expect(k8s.Create(t.Context(), configMap(f.own, "probe", nil))).To(gomega.MatchError(gomega.ContainSubstring("exceeded quota")))
	template := get(t, f.prod).Spec.Template

	f.failNextCanaryRollout(t)
	replicate(t, map[string]string{"level": "bad"}, f.canaryNS, f.prodNS)
	g.Eventually(func() []string { return eventsWithReason(t, f.canaryNS, "web", safe.ReasonChangeHalted) }).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() string { return pendingReason(t, f.prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Expect(activeHalts(t, f.own)).To(gomega.BeZero(), "the record could not be written")
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, f.prod).Spec.Template }).Should(gomega.Equal(template))

	// Restarted before the record could be written, Reroll derives the halt
	// again from the failed canary's signed record: production still holds,
	// and the halt is told again.
	told := len(eventsWithReason(t, f.canaryNS, "web", safe.ReasonChangeHalted))
	f.reroll.stop(t)
	f.reroll = startReroll(t, f.own, f.opts)
	g.Eventually(func() int { return len(eventsWithReason(t, f.canaryNS, "web", safe.ReasonChangeHalted)) }).Should(gomega.BeNumerically(">", told))
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, f.prod).Spec.Template }).Should(gomega.Equal(template))
	g.Expect(pendingReason(t, f.prod)).To(gomega.Equal(safe.HoldHalted))
	g.Expect(activeHalts(t, f.own)).To(gomega.BeZero(), "the record still could not be written")

	// The failed canary goes too, and Reroll restarts again: nothing is
	// left to derive the halt from but production's own signed record of
	// the halt that holds it, and production still holds.
	g.Expect(member(t, f.prod).Halted.IsZero()).To(gomega.BeFalse(), "production keeps the time of the halt that holds it")
	g.Expect(k8s.Delete(t.Context(), f.canary)).To(gomega.Succeed())
	// Told on the changed object production reads.
	told = len(eventsWithReason(t, f.prodNS, "cfg", safe.ReasonChangeHalted))
	f.reroll.stop(t)
	f.reroll = startReroll(t, f.own, f.opts)
	g.Eventually(func() int { return len(eventsWithReason(t, f.prodNS, "cfg", safe.ReasonChangeHalted)) }).Should(gomega.BeNumerically(">", told))
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, f.prod).Spec.Template }).Should(gomega.Equal(template))
	g.Expect(pendingReason(t, f.prod)).To(gomega.Equal(safe.HoldHalted))

	g.Expect(k8s.Delete(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: f.own, Name: "full"}})).To(gomega.Succeed())
	g.Eventually(func() int { return activeHalts(t, f.own) }).Should(gomega.Equal(1), "recorded once the API accepts it")
	g.Expect(haltRecord(t, f.opts.Key, f.own, member(t, f.prod).Sets[0]).Active()).To(gomega.BeTrue())
	g.Expect(rolledEvents(t, f.prodNS, "web")).To(gomega.BeEmpty())
}

// Halt records count only as Reroll signed them. A halt record of the
// coming content, signed under the installation key, holds the canary and
// production (the positive control); the same signed record copied into
// the ConfigMap of the next content's set (a replay, by someone who may
// write ConfigMaps in Reroll's namespace) holds nothing: the set rolls,
// canary first, and the copy gets a ForgedHaltRecord Warning Event.
func TestDelivery_AHaltRecordRerollDidNotSignHoldsNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := newFleet(t)
	// The set ID of content data: all copies in the placed namespaces
	// share it (scope "").
	setOf := func(data map[string]string) string {
		return safe.SetID(f.opts.Key, "", "ConfigMap", "cfg", digest.ReloaderSHA1OfConfigMap(data, nil), false)
	}
	halt := safe.Halt{Halted: time.Now().UTC().Truncate(time.Second), Failed: []string{"Deployment/" + f.canaryNS + "/web"},
		Signal: "Deployment/" + f.canaryNS + "/web: written for the test", Objects: []string{"ConfigMap/" + f.canaryNS + "/cfg"}}

	second := map[string]string{"level": "second"}
	signed := haltConfigMap(f.opts.Key, f.own, setOf(second), halt)
	create(t, signed)
	replicate(t, second, f.canaryNS, f.prodNS)
	g.Eventually(func() string { return pendingReason(t, f.prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Eventually(func() string { return pendingReason(t, f.canary) }).Should(gomega.Equal(safe.HoldHalted))
	g.Expect(member(t, f.prod).Sets).To(gomega.Equal([]string{setOf(second)}), "the test names the set Reroll computes")

	third := map[string]string{"level": "third"}
	replay := haltConfigMap(f.opts.Key, f.own, setOf(third), halt)
	replay.Data = get(t, signed).Data
	create(t, replay)
	replicate(t, third, f.canaryNS, f.prodNS)
	g.Eventually(func() []string { return rolledEvents(t, f.canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() []string { return rolledEvents(t, f.prodNS, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() []string { return eventsWithReason(t, f.own, replay.Name, halts.ReasonForgedRecord) }).ShouldNot(gomega.BeEmpty())
	g.Expect(member(t, f.prod).Sets).To(gomega.Equal([]string{setOf(third)}))
	g.Expect(member(t, f.prod).Rolled).NotTo(gomega.BeTemporally("<", member(t, f.canary).Rolled), "canary first")
}
