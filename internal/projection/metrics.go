package projection

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// projectionMetrics are the controller's Prometheus metrics. A nil
// *projectionMetrics records nothing.
type projectionMetrics struct {
	projections *prometheus.GaugeVec
	writes      prometheus.Counter
	failures    *prometheus.CounterVec

	mu    sync.Mutex
	ready map[types.NamespacedName]bool
}

// newMetrics creates the metrics and registers them with reg
// (controller-runtime's registry in production).
func newMetrics(reg prometheus.Registerer) (*projectionMetrics, error) {
	m := &projectionMetrics{
		projections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reroll_projections",
			Help: "Projections Reroll reconciles, by whether they are Ready (true, false).",
		}, []string{"ready"}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reroll_projection_writes_total",
			Help: "Server-side applies of projected fields to targets.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reroll_projection_failures_total",
			Help: "Reconciles of Projections that could not project, by reason (the Ready condition's: TargetNotFound, Forbidden, SourceNotFound, Conflict, ...; error for transient API errors).",
		}, []string{"reason"}),
		ready: map[types.NamespacedName]bool{},
	}
	for _, c := range []prometheus.Collector{m.projections, m.writes, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *projectionMetrics) wrote() {
	if m != nil {
		m.writes.Inc()
	}
}

func (m *projectionMetrics) failed(reason string) {
	if m != nil {
		m.failures.WithLabelValues(reason).Inc()
	}
}

// set records whether the Projection is Ready.
func (m *projectionMetrics) set(p types.NamespacedName, ready bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready[p] = ready
	m.publish()
}

// forget drops a deleted Projection.
func (m *projectionMetrics) forget(p types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ready, p)
	m.publish()
}

func (m *projectionMetrics) publish() {
	n := 0
	for _, r := range m.ready {
		if r {
			n++
		}
	}
	m.projections.WithLabelValues("true").Set(float64(n))
	m.projections.WithLabelValues("false").Set(float64(len(m.ready) - n))
}
