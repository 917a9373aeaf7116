package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics of versioned configuration's copies (internal/pingc): their
// garbage collection and the rotation receipts. Labels are kinds and
// namespaces only: no object name (a source's name can be unbounded in
// number), no digest, no value.
var (
	copiesCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_copies_created_total",
		Help: "Copies of ConfigMaps and Secrets (versioned configuration) that Reroll created, by kind (ConfigMap, Secret) and namespace: one per content of a source per namespace, however many workloads share it.",
	}, []string{"kind", "namespace"})
	copiesDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_copies_deleted_total",
		Help: "Copies of ConfigMaps and Secrets (versioned configuration) that Reroll deleted because no workload template, ReplicaSet, ControllerRevision, Job or pod named them any more, by kind (ConfigMap, Secret) and namespace.",
	}, []string{"kind", "namespace"})
	rotationsConverged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_rotations_converged_total",
		Help: "Previous versions of ConfigMaps and Secrets that no pod uses any more (a Converged Event each), by kind (ConfigMap, Secret) and namespace.",
	}, []string{"kind", "namespace"})
	rotationPodsMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_rotation_pods_moved_total",
		Help: "Pods that were on a previous version of a ConfigMap or Secret when Reroll found it superseded, counted when that version converged, by kind (ConfigMap, Secret) and namespace.",
	}, []string{"kind", "namespace"})
	rotationWorkloadsMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reroll_rotation_workloads_moved_total",
		Help: "Workloads whose pods were on a previous version of a ConfigMap or Secret when Reroll found it superseded, counted when that version converged, by kind (ConfigMap, Secret) and namespace.",
	}, []string{"kind", "namespace"})
	rotationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "reroll_rotation_convergence_seconds",
		Help: "Seconds from a ConfigMap's or Secret's change to the moment no pod used its previous version any more, by kind (ConfigMap, Secret).",
		// From a fast rollout (seconds) to a drained fleet (hours).
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
	}, []string{"kind"})
	previousVersionPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reroll_previous_version_pods",
		Help: "Pods that still name a previous version (a copy whose content its source no longer holds) of a ConfigMap or Secret, by kind (ConfigMap, Secret) and namespace, as of Reroll's last look at the namespace.",
	}, []string{"kind", "namespace"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(copiesCreated, copiesDeleted, rotationsConverged, rotationPodsMoved, rotationWorkloadsMoved, rotationSeconds, previousVersionPods)
}

// CopyCreated counts one copy of kind created in namespace.
func CopyCreated(kind, namespace string) {
	copiesCreated.WithLabelValues(kind, namespace).Inc()
}

// CopyDeleted counts one copy of kind deleted in namespace.
func CopyDeleted(kind, namespace string) {
	copiesDeleted.WithLabelValues(kind, namespace).Inc()
}

// RotationConverged records one previous version of kind in namespace
// that converged: workloads and pods moved off it, in seconds.
func RotationConverged(kind, namespace string, workloads, pods int, seconds float64) {
	rotationsConverged.WithLabelValues(kind, namespace).Inc()
	rotationWorkloadsMoved.WithLabelValues(kind, namespace).Add(float64(workloads))
	rotationPodsMoved.WithLabelValues(kind, namespace).Add(float64(pods))
	rotationSeconds.WithLabelValues(kind).Observe(seconds)
}

// PreviousVersionPods sets how many pods of namespace name a previous
// version of kind; 0 removes the series.
func PreviousVersionPods(kind, namespace string, pods int) {
	if pods == 0 {
		previousVersionPods.DeleteLabelValues(kind, namespace)
		return
	}
	previousVersionPods.WithLabelValues(kind, namespace).Set(float64(pods))
}

// CopiesCreatedCount returns reroll_copies_created_total for kind and
// namespace; tests read it.
func CopiesCreatedCount(kind, namespace string) float64 {
	return counterValue(copiesCreated.WithLabelValues(kind, namespace))
}

// CopiesDeletedCount and RotationsConvergedCount return the counters for
// kind and namespace; tests read them.
func CopiesDeletedCount(kind, namespace string) float64 {
	return counterValue(copiesDeleted.WithLabelValues(kind, namespace))
}

// RotationsConvergedCount returns reroll_rotations_converged_total for
// kind and namespace.
func RotationsConvergedCount(kind, namespace string) float64 {
	return counterValue(rotationsConverged.WithLabelValues(kind, namespace))
}
