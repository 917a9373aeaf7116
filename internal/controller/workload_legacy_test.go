package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

// recordLog is every record value a watch on Deployments saw.
type recordLog struct {
	mu     sync.Mutex
	values []string
}

func (l *recordLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.values)
}

// watchRecords records every value of ObservedAnnotation on the
// Deployments of ns, each update of the watch, so that a record written for
// a moment is seen.
func watchRecords(t *testing.T, ns string) *recordLog {
	t.Helper()
	g := newT(t)
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	l := &recordLog{}
	saw := func(o any) {
		if d, ok := o.(*appsv1.Deployment); ok {
			l.mu.Lock()
			l.values = append(l.values, d.Annotations[ObservedAnnotation])
			l.mu.Unlock()
		}
	}
	inf, err := c.GetInformer(t.Context(), &appsv1.Deployment{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: saw, UpdateFunc: func(_, o any) { saw(o) }})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Start(ctx) }()
	t.Cleanup(cancel)
	g.Expect(c.WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	return l
}

// recordedDigest is the digest the record of d holds for key of object id
// ("ConfigMap/cfg").
func recordedDigest(t *testing.T, d *appsv1.Deployment, id, key string) string {
	t.Helper()
	rec, err := plan.ParseRecord(get(t, d).Annotations[ObservedAnnotation])
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return rec[id][key]
}

// The third review (M1): a tenant writes reroll.dev/observed-key: <the
// legacy scheme's ID> on their own workload and puts a value of their
// choosing in its ConfigMap. Reroll compared under the legacy scheme and
// wrote HMAC(key, value), bound to no place, into the record: an oracle for
// guesses against digests published before the upgrade. Before the
// migration deadline the comparison still happens (a change made during an
// upgrade rolls), but the record written is the current key's; after it,
// the legacy ID counts as another key's.
func TestWorkloadReconciler_LegacySchemeIsNoOracle(t *testing.T) {
	t.Parallel()
	key := testKey(t, 34)
	for name, c := range map[string]struct {
		until time.Time // the migration deadline
		rolls bool      // whether the tenant's change rolls
	}{
		"before the deadline": {until: time.Now().Add(time.Hour), rolls: true},
		"after the deadline":  {until: time.Now().Add(-time.Hour), rolls: false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
			web := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
			create(t, web)
			written := watchRecords(t, ns)
			first := startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}, LegacyRecordsUntil: c.until})
			recorded(t, web)
			waitRolledOut(t, web)
			// While no Reroll runs (so that one reconcile sees both): the
			// tenant names the legacy scheme and sets a value of their
			// choosing.
			first.stop(t)
			update(t, web, func(d *appsv1.Deployment) { d.Annotations[KeyAnnotation] = key.Legacy().ID() })
			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "guess" })
			startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}, LegacyRecordsUntil: c.until})
			bound := key.Digest("ConfigMap", ns, "cfg", "a", []byte("guess"))[:16]
			legacy := key.Legacy().Value([]byte("guess"))[:16]
			// Positive: reconciled, and recorded under the current key.
			g.Eventually(func() string { return recordedDigest(t, web, "ConfigMap/cfg", "a") }).Should(gomega.Equal(bound))
			g.Expect(get(t, web).Annotations).To(gomega.HaveKeyWithValue(KeyAnnotation, key.ID()))
			if c.rolls {
				g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
				// The pod template's hash is of the current key's record too.
				rec, err := plan.ParseRecord(get(t, web).Annotations[ObservedAnnotation])
				g.Expect(err).NotTo(gomega.HaveOccurred())
				g.Expect(get(t, web).Spec.Template.Annotations).To(gomega.HaveKeyWithValue(trigger.ConfigHashAnnotation, rec.ConfigHash()))
			} else {
				g.Consistently(func() []string { return rolledEvents(t, ns, "web") }, 3*time.Second).Should(gomega.BeEmpty(),
					"past the deadline the legacy ID is another key's: recorded again, nothing rolls")
			}
			g.Consistently(written.all, 2*time.Second).ShouldNot(gomega.ContainElement(gomega.ContainSubstring(legacy)),
				"the legacy digest of the tenant's value is never written, not even for a moment")
			g.Expect(written.all()).To(gomega.ContainElement(gomega.ContainSubstring(bound)), "positive control: the watch sees the records")
		})
	}
}
