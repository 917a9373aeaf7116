package metrics

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the result label of reroll_rollouts_total.
const (
	// ResultSuccess: the pod template was patched.
	ResultSuccess = "success"
	// ResultNotified: with --webhook-url, the change was posted instead.
	ResultNotified = "notified"
	// ResultError: the patch or the webhook call failed; it is retried.
	ResultError = "error"
)

// Values of the reason label of reroll_skipped_total: why a ConfigMap or
// Secret change that reached a workload did not roll it.
const (
	// NoConsumedKeyChanged: the object changed, but no key the workload
	// consumes did (or Reroll had already rolled for it).
	NoConsumedKeyChanged = "no_consumed_key_changed"
	// OutOfScope: the workload's namespace is outside --namespace-selector
	// (or the other scope flags).
	OutOfScope = "out_of_scope"
	// CreateNotEnabled: the object was created, without --reload-on-create.
	CreateNotEnabled = "create_not_enabled"
	// DeleteNotEnabled: the object was deleted, without --reload-on-delete.
	DeleteNotEnabled = "delete_not_enabled"
	// MatchCostExceeded: the workload's list patterns cost more than
	// annotation.MaxMatchCost to match against its namespace's names, so
	// nothing was decided (plan.Refused; an InvalidAnnotation Warning says
	// which annotation).
	MatchCostExceeded = "match_cost_exceeded"
)

// The collectors, registered once with controller-runtime's registry, as
// controller-runtime registers its own; every reconciler adds to them.
var (
	rollouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_rollouts_total",
		Help: "Rollouts of workloads because consumed ConfigMap or Secret data changed, by workload kind, namespace, kind of the changed objects (ConfigMap, Secret, or ConfigMap,Secret when one rollout answered both) and result (success, notified, error).",
	}, []string{"kind", "namespace", "source_kind", "result"})
	changeToRollout = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "reroll_change_to_rollout_seconds",
		Help: "Seconds from the ConfigMap or Secret event Reroll received to the successful patch (or webhook call) that rolled a workload for it.",
		// From an idle controller (milliseconds) to a deep queue or a
		// failing API server retried with backoff (minutes).
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900},
	})
	skipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_skipped_total",
		Help: "ConfigMap and Secret changes that reached a workload and did not roll it, by reason (no_consumed_key_changed, out_of_scope, create_not_enabled, delete_not_enabled, match_cost_exceeded).",
	}, []string{"reason"})
	references = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reroll_references",
		Help: "References from opted-in workloads to the ConfigMaps and Secrets that decide their rollouts, by kind of the referenced object.",
	}, []string{"source_kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(rollouts, changeToRollout, skipped, references)
}

// Workloads records the metrics of the workloads of one kind. It also holds
// what the metrics need in memory and nowhere else: when Reroll first saw a
// change that is not rolled yet, and how many references each workload has.
// Losing it on a restart loses only metric samples, never a decision. A nil
// *Workloads records nothing. Its methods may be called concurrently.
type Workloads struct {
	kind string
	now  func() time.Time

	mu      sync.Mutex
	pending map[types.NamespacedName]*pending
	refs    map[types.NamespacedName]Counts
}

// pending is a change seen for a workload and not settled yet.
type pending struct {
	// first is when the oldest unsettled change was seen; last the newest.
	first, last time.Time
	// started is when the latest reconcile of the workload began.
	started time.Time
}

// Counts are a workload's references by kind of the referenced object.
// Workloads holds one per workload with references: int32 (a pod template
// holds far fewer) keeps its map's entry at 40 bytes, not 48.
type Counts struct {
	ConfigMaps, Secrets int32
}

// NewWorkloads returns the recorder for workload kind (e.g. "Deployment").
// now is the clock; nil means time.Now.
func NewWorkloads(kind string, now func() time.Time) *Workloads {
	if now == nil {
		now = time.Now
	}
	return &Workloads{kind: kind, now: now, pending: map[types.NamespacedName]*pending{}, refs: map[types.NamespacedName]Counts{}}
}

// ChangeSeen records that a ConfigMap or Secret change was mapped to the
// workload. Only the first of several changes before the workload settles
// counts, so the latency covers the oldest change a rollout answers.
func (w *Workloads) ChangeSeen(nn types.NamespacedName) {
	if w == nil {
		return
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pending[nn]; p != nil {
		p.last = now
		return
	}
	w.pending[nn] = &pending{first: now, last: now}
}

// Matched records that a ConfigMap or Secret change was mapped to n
// workloads of this kind (Reloader's reloader_workloads_matched_total).
func (w *Workloads) Matched(n int) {
	if w == nil || n == 0 {
		return
	}
	reloaderMatched.WithLabelValues(w.kind).Add(float64(n))
}

// Begin marks the start of a reconcile of the workload: a change seen after
// this moment may not be in what the reconcile reads, so it stays pending
// when the reconcile settles.
func (w *Workloads) Begin(nn types.NamespacedName) {
	if w == nil {
		return
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pending[nn]; p != nil {
		p.started = now
	}
}

// settle ends the pending change of a workload whose reconcile finished and
// returns when it was first seen; ok is false when no change was pending.
func (w *Workloads) settle(nn types.NamespacedName) (first time.Time, ok bool) {
	p := w.pending[nn]
	if p == nil {
		return time.Time{}, false
	}
	first = p.first
	if p.last.After(p.started) {
		// A change arrived during the reconcile; its own reconcile follows.
		p.first = p.last
	} else {
		w.forgetPending(nn)
	}
	return first, true
}

// forgetPending drops the pending change of a workload; it holds mu. Go
// keeps a map's room after its entries go: once none is pending, the map
// is replaced, so the room that a fan-out's 2,000 changes took is freed.
func (w *Workloads) forgetPending(nn types.NamespacedName) {
	delete(w.pending, nn)
	if len(w.pending) == 0 {
		w.pending = map[types.NamespacedName]*pending{}
	}
}

// Rolled records a successful rollout of the workload for changes to objects
// of sourceKinds ("ConfigMap", "Secret"); notified means --webhook-url was
// called instead of patching the pod template. It observes the time since
// the change was first seen, when one was.
func (w *Workloads) Rolled(nn types.NamespacedName, sourceKinds []string, notified bool) {
	if w == nil {
		return
	}
	result := ResultSuccess
	if notified {
		result = ResultNotified
	}
	rollouts.WithLabelValues(w.kind, nn.Namespace, sourceKind(sourceKinds), result).Inc()
	reloaderReload(w.kind, nn.Namespace, true)
	w.mu.Lock()
	first, ok := w.settle(nn)
	w.mu.Unlock()
	if ok {
		s := w.now().Sub(first).Seconds()
		changeToRollout.Observe(s)
		reloaderActionSeconds.WithLabelValues(w.kind).Observe(s)
	}
}

// Failed records a rollout whose patch or webhook call failed. The change
// stays pending: the retry's latency counts from the first sight.
func (w *Workloads) Failed(nn types.NamespacedName, sourceKinds []string) {
	if w == nil {
		return
	}
	rollouts.WithLabelValues(w.kind, nn.Namespace, sourceKind(sourceKinds), ResultError).Inc()
	reloaderReload(w.kind, nn.Namespace, false)
}

// Skipped records that the workload's reconcile finished without a rollout
// for the reason given. It counts only when a change was pending, so that
// reconciles for other causes (a start, an edit of the workload) do not.
func (w *Workloads) Skipped(nn types.NamespacedName, reason string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	_, ok := w.settle(nn)
	w.mu.Unlock()
	if ok {
		skipped.WithLabelValues(reason).Inc()
		reloaderSkip(reason)
	}
}

// OutOfScope records that the workload is outside the scope
// (--namespace-selector): a pending change is skipped for that reason, and
// its references no longer count.
func (w *Workloads) OutOfScope(nn types.NamespacedName) {
	w.Skipped(nn, OutOfScope)
	w.References(nn, Counts{})
}

// Settled records that the workload's reconcile finished without a rollout
// and without a skip to count: Reroll saw the workload for the first time,
// so there was nothing to compare with.
func (w *Workloads) Settled(nn types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.settle(nn)
}

// References sets the workload's references.
func (w *Workloads) References(nn types.NamespacedName, c Counts) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.refs[nn]
	if c == (Counts{}) {
		delete(w.refs, nn)
	} else {
		w.refs[nn] = c
	}
	if d := c.ConfigMaps - old.ConfigMaps; d != 0 {
		references.WithLabelValues("ConfigMap").Add(float64(d))
	}
	if d := c.Secrets - old.Secrets; d != 0 {
		references.WithLabelValues("Secret").Add(float64(d))
	}
}

// Forget drops what is held for a workload that no longer exists.
func (w *Workloads) Forget(nn types.NamespacedName) {
	if w == nil {
		return
	}
	w.References(nn, Counts{})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetPending(nn)
}

// sourceKind is the source_kind label for a rollout: the distinct kinds,
// sorted and comma-separated.
func sourceKind(kinds []string) string {
	kinds = slices.Clone(kinds)
	slices.Sort(kinds)
	return strings.Join(slices.Compact(kinds), ",")
}
