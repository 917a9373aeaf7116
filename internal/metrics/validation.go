package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var invalidContent = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "reroll_invalid_content_total",
	Help: "New contents of ConfigMaps and Secrets that failed a Validator's rule, by kind (ConfigMap, Secret) and namespace; nothing rolled for them.",
}, []string{"kind", "namespace"})

func init() {
	ctrlmetrics.Registry.MustRegister(invalidContent)
}

// InvalidContent counts one content of a ConfigMap or Secret (kind) in
// namespace that failed validation.
func InvalidContent(kind, namespace string) {
	invalidContent.WithLabelValues(kind, namespace).Inc()
}

// InvalidContentCount returns reroll_invalid_content_total for kind and
// namespace; tests read it.
func InvalidContentCount(kind, namespace string) float64 {
	var m dto.Metric
	if err := invalidContent.WithLabelValues(kind, namespace).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
