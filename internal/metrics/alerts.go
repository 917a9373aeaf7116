package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the result label of reroll_alerts_total.
const (
	// AlertSent: the sink accepted the alert (a 2xx answer).
	AlertSent = "sent"
	// AlertFailed: every attempt failed, or Reroll stopped before one
	// succeeded; the alert is given up.
	AlertFailed = "failed"
	// AlertDropped: the queue was full; the alert was never sent.
	AlertDropped = "dropped"
)

var alerts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "reroll_alerts_total",
	Help: "Alerts after rollouts (ALERT_ON_RELOAD), by sink (slack, teams, gchat, webhook) and result (sent, failed, dropped).",
}, []string{"sink", "result"})

func init() {
	ctrlmetrics.Registry.MustRegister(alerts)
}

// Alert counts one alert for sink with the result (AlertSent, AlertFailed
// or AlertDropped).
func Alert(sink, result string) {
	alerts.WithLabelValues(sink, result).Inc()
}

// AlertCount returns how many alerts for sink had the result; tests read it.
func AlertCount(sink, result string) float64 {
	var m dto.Metric
	if err := alerts.WithLabelValues(sink, result).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
