package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// clock is a settable time for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }
func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// value returns the value of a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue() + d.GetGauge().GetValue()
}

// latency returns the sample count and sum of reroll_change_to_rollout_seconds.
func latency(t *testing.T) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := changeToRollout.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestWorkloads_RolledObservesTimeSinceFirstChange(t *testing.T) {
	g := gomega.NewWithT(t)
	c := newClock()
	w := NewWorkloads("Deployment", c.now)
	nn := key("latency-first", "web")
	count, sum := latency(t)

	w.ChangeSeen(nn)
	c.advance(2 * time.Second)
	w.ChangeSeen(nn) // a second change before the reconcile: the first counts
	c.advance(time.Second)
	w.Begin(nn)
	c.advance(2 * time.Second)
	w.Rolled(nn, []string{"ConfigMap"}, false)

	newCount, newSum := latency(t)
	g.Expect(newCount - count).To(gomega.BeEquivalentTo(1))
	g.Expect(newSum - sum).To(gomega.BeNumerically("~", 5, 1e-9))
	g.Expect(value(t, rollouts.WithLabelValues("Deployment", "latency-first", "ConfigMap", ResultSuccess))).To(gomega.Equal(1.0))
	g.Expect(w.pending).To(gomega.BeEmpty(), "settled")
}

func TestWorkloads_ChangeDuringReconcileStaysPending(t *testing.T) {
	g := gomega.NewWithT(t)
	c := newClock()
	w := NewWorkloads("Deployment", c.now)
	nn := key("latency-during", "web")

	w.ChangeSeen(nn)
	w.Begin(nn)
	c.advance(time.Second)
	w.ChangeSeen(nn) // arrives while the reconcile runs; it may not have read it
	c.advance(time.Second)
	count, sum := latency(t)
	w.Rolled(nn, []string{"Secret"}, false)
	newCount, newSum := latency(t)
	g.Expect(newCount - count).To(gomega.BeEquivalentTo(1))
	g.Expect(newSum-sum).To(gomega.BeNumerically("~", 2, 1e-9), "the first rollout answers the first change, 2s ago")
	g.Expect(w.pending).To(gomega.HaveKey(nn), "the second change waits for its own reconcile")

	w.Begin(nn)
	c.advance(3 * time.Second)
	count, sum = latency(t)
	w.Rolled(nn, []string{"Secret"}, false)
	newCount, newSum = latency(t)
	g.Expect(newCount - count).To(gomega.BeEquivalentTo(1))
	g.Expect(newSum-sum).To(gomega.BeNumerically("~", 4, 1e-9), "counted from the second change")
	g.Expect(w.pending).To(gomega.BeEmpty())
}

func TestWorkloads_SkippedCountsOnlyPendingChanges(t *testing.T) {
	g := gomega.NewWithT(t)
	w := NewWorkloads("StatefulSet", nil)
	nn := key("skipped", "db")
	before := value(t, skipped.WithLabelValues(CreateNotEnabled))

	w.Skipped(nn, CreateNotEnabled) // a reconcile with no change behind it
	g.Expect(value(t, skipped.WithLabelValues(CreateNotEnabled))).To(gomega.Equal(before))

	w.ChangeSeen(nn)
	w.Begin(nn)
	w.Skipped(nn, CreateNotEnabled)
	g.Expect(value(t, skipped.WithLabelValues(CreateNotEnabled))).To(gomega.Equal(before + 1))

	w.ChangeSeen(nn)
	w.Begin(nn)
	w.Settled(nn) // first sight: nothing to count
	g.Expect(value(t, skipped.WithLabelValues(CreateNotEnabled))).To(gomega.Equal(before + 1))
	g.Expect(w.pending).To(gomega.BeEmpty())
}

func TestWorkloads_FailedKeepsChangePending(t *testing.T) {
	g := gomega.NewWithT(t)
	w := NewWorkloads("DaemonSet", nil)
	nn := key("failed", "agent")
	w.ChangeSeen(nn)
	w.Begin(nn)
	w.Failed(nn, []string{"Secret", "ConfigMap", "Secret"})
	g.Expect(value(t, rollouts.WithLabelValues("DaemonSet", "failed", "ConfigMap,Secret", ResultError))).To(gomega.Equal(1.0))
	g.Expect(w.pending).To(gomega.HaveKey(nn))
	w.Rolled(nn, []string{"ConfigMap"}, true)
	g.Expect(value(t, rollouts.WithLabelValues("DaemonSet", "failed", "ConfigMap", ResultNotified))).To(gomega.Equal(1.0))
	g.Expect(w.pending).To(gomega.BeEmpty())
}

func TestWorkloads_ReferencesFollowWorkloads(t *testing.T) {
	g := gomega.NewWithT(t)
	w := NewWorkloads("Deployment", nil)
	cms, secrets := references.WithLabelValues("ConfigMap"), references.WithLabelValues("Secret")
	cm0, s0 := value(t, cms), value(t, secrets)

	w.References(key("refs", "a"), Counts{ConfigMaps: 2, Secrets: 1})
	w.References(key("refs", "b"), Counts{ConfigMaps: 1})
	g.Expect(value(t, cms) - cm0).To(gomega.Equal(3.0))
	g.Expect(value(t, secrets) - s0).To(gomega.Equal(1.0))

	w.References(key("refs", "a"), Counts{ConfigMaps: 1, Secrets: 1}) // the template dropped one
	w.Forget(key("refs", "b"))                                        // deleted
	g.Expect(value(t, cms) - cm0).To(gomega.Equal(1.0))
	g.Expect(value(t, secrets) - s0).To(gomega.Equal(1.0))

	w.References(key("refs", "a"), Counts{}) // opted out
	g.Expect(value(t, cms) - cm0).To(gomega.Equal(0.0))
	g.Expect(w.refs).To(gomega.BeEmpty())
}

// TestWorkloads_HoldEightBytesOfCountsPerWorkload: the counts held per
// workload with references (every opted-in workload) stay 8 bytes.
func TestWorkloads_HoldEightBytesOfCountsPerWorkload(t *testing.T) {
	w := NewWorkloads("Deployment", nil)
	w.References(key("refs", "a"), Counts{ConfigMaps: 1})
	for nn, c := range w.refs {
		if size := unsafe.Sizeof(c); size > 8 {
			t.Errorf("the counts of %s take %d bytes, want at most 8", nn, size)
		}
	}
	if len(w.refs) != 1 {
		t.Errorf("%d workloads' counts held, want 1", len(w.refs))
	}
}

func TestWorkloads_NilRecordsNothing(t *testing.T) {
	g := gomega.NewWithT(t)
	// every call of a *Workloads, for a workload of its own namespace.
	every := func(w *Workloads) {
		nn := key("nil", "x")
		w.ChangeSeen(nn)
		w.Begin(nn)
		w.Rolled(nn, []string{"ConfigMap"}, false)
		w.Failed(nn, []string{"Secret"})
		w.ChangeSeen(nn)
		w.Begin(nn)
		w.Skipped(nn, NoConsumedKeyChanged)
		w.References(nn, Counts{ConfigMaps: 1})
		w.ChangeSeen(nn)
		w.Begin(nn)
		w.OutOfScope(nn)
		w.Settled(nn)
		w.References(nn, Counts{Secrets: 1})
		w.Forget(nn)
	}
	gather := func() string {
		families, err := ctrlmetrics.Registry.Gather()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var b strings.Builder
		for _, f := range families {
			b.WriteString(f.String())
			b.WriteString("\n")
		}
		return b.String()
	}

	// Positive control: the same calls on a real recorder change the
	// registry.
	before := gather()
	every(NewWorkloads("Deployment", newClock().now))
	g.Expect(gather()).NotTo(gomega.Equal(before), "the calls record on a real *Workloads")

	before = gather()
	every(nil)
	g.Expect(gather()).To(gomega.Equal(before), "a nil *Workloads records nothing")
}

func TestWorkloads_OutOfScopeSkipsAndStopsCountingReferences(t *testing.T) {
	g := gomega.NewWithT(t)
	w := NewWorkloads("Deployment", nil)
	nn := key("scope", "web")
	cms := references.WithLabelValues("ConfigMap")
	cm0, skipped0 := value(t, cms), value(t, skipped.WithLabelValues(OutOfScope))

	w.References(nn, Counts{ConfigMaps: 1})
	w.ChangeSeen(nn)
	w.Begin(nn)
	w.OutOfScope(nn) // its namespace left --namespace-selector
	g.Expect(value(t, cms)).To(gomega.Equal(cm0))
	g.Expect(value(t, skipped.WithLabelValues(OutOfScope))).To(gomega.Equal(skipped0 + 1))
	g.Expect(w.pending).To(gomega.BeEmpty())
}

// Issue #36: once every pending change is settled, the map of pending
// changes is a new one (Go keeps a map's room), and a change seen after
// that is still timed from its first sight.
func TestWorkloads_PendingChangesAfterAFanOutAreTimedFromTheirFirstSight(t *testing.T) {
	g := gomega.NewWithT(t)
	c := newClock()
	w := NewWorkloads("Deployment", c.now)
	for i := range 2000 {
		w.ChangeSeen(key("latency-fanout", "w"+strconv.Itoa(i)))
	}
	c.advance(time.Second)
	count, sum := latency(t)
	for i := range 2000 {
		nn := key("latency-fanout", "w"+strconv.Itoa(i))
		w.Begin(nn)
		w.Rolled(nn, []string{"ConfigMap"}, false)
	}
	newCount, newSum := latency(t)
	g.Expect(newCount - count).To(gomega.BeEquivalentTo(2000))
	g.Expect(newSum - sum).To(gomega.BeNumerically("~", 2000, 1e-6))
	g.Expect(w.pending).To(gomega.BeEmpty())

	nn := key("latency-fanout", "w7")
	w.ChangeSeen(nn)
	c.advance(3 * time.Second)
	w.Begin(nn)
	count, sum = latency(t)
	w.Rolled(nn, []string{"ConfigMap"}, false)
	newCount, newSum = latency(t)
	g.Expect(newCount - count).To(gomega.BeEquivalentTo(1))
	g.Expect(newSum-sum).To(gomega.BeNumerically("~", 3, 1e-9), "the change after the fan-out, timed from its own first sight")
	g.Expect(w.pending).To(gomega.BeEmpty())
}
