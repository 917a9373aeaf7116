package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/baseline"
)

// writeCounter is the real client k8s, counting its creates and updates.
type writeCounter struct {
	client.Client
	writes *atomic.Int64
}

func (w writeCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w.writes.Add(1)
	return w.Client.Create(ctx, obj, opts...)
}

func (w writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w.writes.Add(1)
	return w.Client.Update(ctx, obj, opts...)
}

func baselineRecord(i int) string { return fmt.Sprintf(`{"ConfigMap/cfg":{"a":"%016d"}}`, i) }

// TestBaselineStore_BatchesPutsAndKeepsThemAcrossRestarts: 50 workers put
// the baselines of 50 workloads of one namespace at once; far fewer writes
// than puts reach the API, every put returns only once written, and a new
// store (a restarted Reroll) reads each baseline back, for its own UID
// only.
func TestBaselineStore_BatchesPutsAndKeepsThemAcrossRestarts(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own := newNamespace(t)
	at := types.NamespacedName{Namespace: own, Name: "reroll-baselines"}
	key := testKey(t, 7)
	var writes atomic.Int64
	s := NewBaselines(writeCounter{Client: k8s, writes: &writes}, k8s, at, key)

	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Put(t.Context(), "team-a", baseline.Entry{Kind: "Deployment", Name: fmt.Sprintf("w%d", i), UID: fmt.Sprintf("uid-%d", i), Record: baselineRecord(i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		g.Expect(err).NotTo(gomega.HaveOccurred(), "put %d", i)
	}
	t.Logf("%d puts, %d writes", n, writes.Load())
	g.Expect(writes.Load()).To(gomega.BeNumerically(">=", 1))
	g.Expect(writes.Load()).To(gomega.BeNumerically("<=", 10), "puts made at once are written together")

	restarted := NewBaselines(k8s, k8s, at, key)
	for i := range n {
		rec, ok, err := restarted.Get(t.Context(), "team-a", "Deployment", fmt.Sprintf("w%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeTrue(), "w%d", i)
		g.Expect(rec).To(gomega.Equal(baselineRecord(i)))
	}
	// Another workload of the same name (a new UID) has none; nor has the
	// same name in another namespace.
	_, ok, err := restarted.Get(t.Context(), "team-a", "Deployment", "w0", "uid-new")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse())
	_, ok, err = restarted.Get(t.Context(), "team-b", "Deployment", "w0", "uid-0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse())

	// Removing one leaves the others.
	g.Expect(restarted.Put(t.Context(), "team-a", baseline.Entry{Kind: "Deployment", Name: "w1"})).To(gomega.Succeed())
	again := NewBaselines(k8s, k8s, at, key)
	_, ok, err = again.Get(t.Context(), "team-a", "Deployment", "w1", "uid-1")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse())
	_, ok, err = again.Get(t.Context(), "team-a", "Deployment", "w2", "uid-2")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())

	// One ConfigMap for the namespace.
	var list corev1.ConfigMapList
	g.Expect(k8s.List(t.Context(), &list, client.InNamespace(own), client.MatchingLabels{StoreLabel: at.Name})).To(gomega.Succeed())
	g.Expect(list.Items).To(gomega.HaveLen(1))
	g.Expect(list.Items[0].Labels).To(gomega.HaveKeyWithValue(StoreNamespaceLabel, "team-a"))
}

// TestBaselineStore_IgnoresWhatRerollDidNotSign: an entry edited in the
// ConfigMap, or one read under another installation key, counts as absent;
// the next write drops the forged one and keeps the others.
func TestBaselineStore_IgnoresWhatRerollDidNotSign(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own := newNamespace(t)
	at := types.NamespacedName{Namespace: own, Name: "reroll-baselines"}
	key := testKey(t, 7)
	s := NewBaselines(k8s, k8s, at, key)
	web := baseline.Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: baselineRecord(1)}
	api := baseline.Entry{Kind: "Deployment", Name: "api", UID: "u2", Record: baselineRecord(2)}
	g.Expect(s.Put(t.Context(), "team-a", web, api)).To(gomega.Succeed())

	// Positive control: both read back.
	fresh := NewBaselines(k8s, k8s, at, key)
	_, ok, err := fresh.Get(t.Context(), "team-a", "Deployment", "web", "u1")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())

	// A tenant with write access to Reroll's namespace edits web's record.
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: own, Name: s.configMapName("team-a")}, cm)).To(gomega.Succeed())
	cm.Data["Deployment.web"] = strings.Replace(cm.Data["Deployment.web"], baselineRecord(1), baselineRecord(9), 1)
	g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())

	forged := NewBaselines(k8s, k8s, at, key)
	_, ok, err = forged.Get(t.Context(), "team-a", "Deployment", "web", "u1")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse(), "an edited entry counts as absent")
	rec, ok, err := forged.Get(t.Context(), "team-a", "Deployment", "api", "u2")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(rec).To(gomega.Equal(baselineRecord(2)))

	otherKey := NewBaselines(k8s, k8s, at, testKey(t, 8))
	_, ok, err = otherKey.Get(t.Context(), "team-a", "Deployment", "api", "u2")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse(), "an entry signed under another key counts as absent")

	g.Expect(forged.Put(t.Context(), "team-a", baseline.Entry{Kind: "Deployment", Name: "db", UID: "u3", Record: baselineRecord(3)})).To(gomega.Succeed())
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: own, Name: s.configMapName("team-a")}, cm)).To(gomega.Succeed())
	g.Expect(cm.Data).NotTo(gomega.HaveKey("Deployment.web"), "the forged entry is dropped at the next write")
	g.Expect(cm.Data).To(gomega.HaveKey("Deployment.api"))
	g.Expect(cm.Data).To(gomega.HaveKey("Deployment.db"))
}

// TestBaselineStore_RefusesWhatDoesNotFit: a put past the namespace's
// bound returns ErrBaselinesFull and keeps what was there.
func TestBaselineStore_RefusesWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own := newNamespace(t)
	at := types.NamespacedName{Namespace: own, Name: "reroll-baselines"}
	key := testKey(t, 7)
	s := NewBaselines(k8s, k8s, at, key)
	web := baseline.Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: baselineRecord(1)}
	s.limit = len(baseline.DataKey("Deployment", "web")) + len(baseline.Seal(key, at.Name, "team-a", web))
	g.Expect(s.Put(t.Context(), "team-a", web)).To(gomega.Succeed())
	err := s.Put(t.Context(), "team-a", baseline.Entry{Kind: "Deployment", Name: "api", UID: "u2", Record: baselineRecord(2)})
	g.Expect(errors.Is(err, ErrBaselinesFull)).To(gomega.BeTrue(), "got %v", err)
	rec, ok, err := NewBaselines(k8s, k8s, at, key).Get(t.Context(), "team-a", "Deployment", "web", "u1")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(rec).To(gomega.Equal(baselineRecord(1)))
}
