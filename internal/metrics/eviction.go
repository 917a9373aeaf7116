package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the result label of reroll_evictions_total.
const (
	// EvictionEvicted: the API server accepted the eviction.
	EvictionEvicted = "evicted"
	// EvictionBlocked: a PodDisruptionBudget (or API Priority and Fairness)
	// refused it with 429; Reroll retries.
	EvictionBlocked = "blocked"
	// EvictionError: the request failed otherwise; Reroll retries.
	EvictionError = "error"
)

var (
	evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_evictions_total",
		Help: "Evictions of pods in restarts by eviction (reroll.dev/restart: evict, --evict-owner), by owner kind and result (evicted, blocked, error).",
	}, []string{"kind", "result"})
	evictionBlocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_eviction_blocked_seconds_total",
		Help: "Seconds that restarts by eviction waited because a PodDisruptionBudget refused an eviction, by owner kind; added when the eviction finally goes through.",
	}, []string{"kind"})
	reverts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_template_reverts_total",
		Help: "Pod templates that another field manager put back after Reroll changed them; Reroll stops patching those workloads. By workload kind.",
	}, []string{"kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(evictions, evictionBlocked, reverts)
}

// Eviction counts one eviction request of a pod of kind with the result
// (EvictionEvicted, EvictionBlocked or EvictionError).
func Eviction(kind, result string) {
	evictions.WithLabelValues(kind, result).Inc()
}

// EvictionUnblocked adds the time a restart of a workload of kind waited on
// a PodDisruptionBudget.
func EvictionUnblocked(kind string, waited time.Duration) {
	evictionBlocked.WithLabelValues(kind).Add(waited.Seconds())
}

// TemplateReverted counts one revert of Reroll's pod template change on a
// workload of kind.
func TemplateReverted(kind string) {
	reverts.WithLabelValues(kind).Inc()
}

// EvictionCount returns reroll_evictions_total for kind and result; tests
// read it.
func EvictionCount(kind, result string) float64 {
	return counterValue(evictions.WithLabelValues(kind, result))
}

// EvictionBlockedSeconds returns reroll_eviction_blocked_seconds_total for
// kind; tests read it.
func EvictionBlockedSeconds(kind string) float64 {
	return counterValue(evictionBlocked.WithLabelValues(kind))
}

// TemplateRevertCount returns reroll_template_reverts_total for kind; tests
// read it.
func TemplateRevertCount(kind string) float64 {
	return counterValue(reverts.WithLabelValues(kind))
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
