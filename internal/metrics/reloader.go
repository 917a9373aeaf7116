package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Stakater Reloader's series, under the names, types and label names that
// Reloader v1.4.21 registers (internal/pkg/metrics/prometheus.go), so that
// the dashboards, recording rules and alerts a Reloader user wrote keep
// matching. They are fed from the same calls as Reroll's own series;
// docs/metrics.md says which are exact and which approximate.
var (
	reloaderReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_reload_executed_total",
		Help: "Reloader-compatible: rollouts Reroll made (success=\"true\") or failed to make (success=\"false\").",
	}, []string{"success"})
	// reloaderReloadsByNamespace counts always, and is registered only with
	// METRICS_COUNT_BY_NAMESPACE=enabled (RegisterReloaderByNamespace), as
	// in Reloader.
	reloaderReloadsByNamespace = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_reload_executed_total_by_namespace",
		Help: "Reloader-compatible: reloader_reload_executed_total by the workload's namespace.",
	}, []string{"success", "namespace"})
	reloaderReconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_reconcile_total",
		Help: "Reloader-compatible: reconciles of workloads, by result (success, error).",
	}, []string{"result"})
	reloaderReconcileSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "reloader_reconcile_duration_seconds",
		Help: "Reloader-compatible: seconds per reconcile of a workload, by result (success, error).",
		// Reloader's buckets, so that a query on le keeps its meaning.
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"result"})
	reloaderActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_action_total",
		Help: "Reloader-compatible: rollouts by workload kind and result (success, error).",
	}, []string{"workload_kind", "result"})
	reloaderActionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "reloader_action_latency_seconds",
		Help: "Reloader-compatible: seconds from the ConfigMap or Secret event Reroll received to the rollout, by workload kind (the same samples as reroll_change_to_rollout_seconds).",
		// Reloader's buckets.
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"workload_kind"})
	reloaderSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_skipped_total",
		Help: "Reloader-compatible: changes that reached a workload and did not roll it, by Reloader's reason (no_data_change, ignored_or_not_selected).",
	}, []string{"reason"})
	reloaderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_errors_total",
		Help: "Reloader-compatible: failed reconciles of workloads (type=\"handler_error\"), each retried with backoff.",
	}, []string{"type"})
	reloaderRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reloader_retries_total",
		Help: "Reloader-compatible: reconciles of workloads put back in the queue with backoff after an error.",
	})
	reloaderEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_events_received_total",
		Help: "Reloader-compatible: ConfigMap and Secret events the informers delivered, by event_type (add, update, delete) and resource_type (configMaps, secrets).",
	}, []string{"event_type", "resource_type"})
	reloaderMatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_workloads_matched_total",
		Help: "Reloader-compatible: workloads a ConfigMap or Secret change was mapped to, by workload kind.",
	}, []string{"kind"})
)

// Reloader's values of the labels above (v1.4.21).
const (
	reloaderNoDataChange   = "no_data_change"
	reloaderNotSelected    = "ignored_or_not_selected"
	reloaderHandlerError   = "handler_error"
	reloaderResultSuccess  = "success"
	reloaderResultError    = "error"
	reloaderResourceCMs    = "configMaps"
	reloaderResourceSecret = "secrets"
)

func init() {
	ctrlmetrics.Registry.MustRegister(reloaderReloads, reloaderReconciles, reloaderReconcileSeconds,
		reloaderActions, reloaderActionSeconds, reloaderSkipped, reloaderErrors, reloaderRetries,
		reloaderEvents, reloaderMatched)
	// Reloader starts both values at 0, so that a rate() or an alert on
	// success="false" has a series before the first failure.
	reloaderReloads.WithLabelValues("true")
	reloaderReloads.WithLabelValues("false")
	reloaderErrors.WithLabelValues(reloaderHandlerError)
}

// MetricsByNamespaceEnv is the environment variable that, set to "enabled",
// adds reloader_reload_executed_total_by_namespace (Reloader's
// METRICS_COUNT_BY_NAMESPACE; its chart sets it from
// reloader.enableMetricsByNamespace).
const MetricsByNamespaceEnv = "METRICS_COUNT_BY_NAMESPACE"

// RegisterReloaderByNamespace registers
// reloader_reload_executed_total_by_namespace with reg. Registering it twice
// with one registry is not an error.
func RegisterReloaderByNamespace(reg prometheus.Registerer) error {
	err := reg.Register(reloaderReloadsByNamespace)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}

// reloaderReload records a rollout of a workload in namespace.
func reloaderReload(kind, namespace string, ok bool) {
	success, result := "true", reloaderResultSuccess
	if !ok {
		success, result = "false", reloaderResultError
	}
	reloaderReloads.WithLabelValues(success).Inc()
	reloaderReloadsByNamespace.WithLabelValues(success, namespace).Inc()
	reloaderActions.WithLabelValues(kind, result).Inc()
}

// reloaderSkip records a skip of Reroll's reason as Reloader's; the
// reasons Reloader does not count (a create or delete without
// --reload-on-create or --reload-on-delete never reaches its handler) are
// not counted.
func reloaderSkip(reason string) {
	switch reason {
	case NoConsumedKeyChanged:
		reloaderSkipped.WithLabelValues(reloaderNoDataChange).Inc()
	case OutOfScope:
		reloaderSkipped.WithLabelValues(reloaderNotSelected).Inc()
	}
}

// Reconciled records one reconcile of a workload that took d and ended
// with err: Reloader's reconcile, error and retry series. A terminal error
// is not retried, so it is not counted as a retry.
func Reconciled(d time.Duration, err error) {
	result := reloaderResultSuccess
	if err != nil {
		result = reloaderResultError
		reloaderErrors.WithLabelValues(reloaderHandlerError).Inc()
		if !errors.Is(err, reconcile.TerminalError(nil)) {
			reloaderRetries.Inc()
		}
	}
	reloaderReconciles.WithLabelValues(result).Inc()
	reloaderReconcileSeconds.WithLabelValues(result).Observe(d.Seconds())
}

// InformerEvents returns an informer event handler that counts the events
// of resource ("ConfigMap" or "Secret") in reloader_events_received_total,
// as Reloader's informers count them: every add (the initial list
// included), update and delete.
func InformerEvents(resource string) toolscache.ResourceEventHandler {
	rt := reloaderResourceCMs
	if resource == "Secret" {
		rt = reloaderResourceSecret
	}
	add, update, del := reloaderEvents.WithLabelValues("add", rt), reloaderEvents.WithLabelValues("update", rt), reloaderEvents.WithLabelValues("delete", rt)
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { add.Inc() },
		UpdateFunc: func(any, any) { update.Inc() },
		DeleteFunc: func(any) { del.Inc() },
	}
}
