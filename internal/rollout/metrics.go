package rollout

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/plan"
)

// Metrics of the bound, computed from the cache at each scrape.
var (
	rolloutsRunningDesc = prometheus.NewDesc("reroll_rollouts_running",
		"Rollouts Reroll started that count against --max-concurrent-rollouts: not yet reported complete by the workload's status, within their deadline.", nil, nil)
	rolloutsWaitingDesc = prometheus.NewDesc("reroll_rollouts_waiting",
		"Workloads with a deferred change (reroll.dev/pending): outside their window, waiting for the previous rollout, a free slot or the end of a pause period.", nil, nil)
	oldestWaitingDesc = prometheus.NewDesc("reroll_rollouts_oldest_waiting_seconds",
		"Age in seconds of the oldest deferred change; 0 when none waits.", nil, nil)
	heldByStormDesc = prometheus.NewDesc("reroll_rollouts_held_by_storm",
		"Workloads whose deferred change the storm breaker holds (--storm-max-rollouts within --storm-period); a part of reroll_rollouts_waiting.", nil, nil)
)

// Describe implements prometheus.Collector: the unlabelled gauges
// reroll_rollouts_running, reroll_rollouts_waiting,
// reroll_rollouts_oldest_waiting_seconds and reroll_rollouts_held_by_storm.
func (t *Tracker) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutsRunningDesc
	ch <- rolloutsWaitingDesc
	ch <- oldestWaitingDesc
	ch <- heldByStormDesc
}

// Collect implements prometheus.Collector, reading the cache (the reader
// given to NewTracker) within 5 seconds under the lock: the running
// rollouts (indexed running and within their deadline, plus those in
// flight that the cache does not show yet), the workloads with a deferred
// change, the age in seconds of the oldest, and those of them the storm
// breaker holds (a signed reason, plan.PendingReason). A cache that cannot be read yields
// no samples (the error is logged).
func (t *Tracker) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	running, waiting, storm := 0, 0, 0
	seen := map[types.UID]bool{}
	var oldest time.Time
	err := errors.Join(
		t.each(ctx, t.reader, indexRunning, func(k Kind, obj client.Object) {
			seen[obj.GetUID()] = true
			if t.running(k, obj, now) {
				running++
			}
		}),
		t.each(ctx, t.reader, indexPending, func(_ Kind, obj client.Object) {
			waiting++
			if plan.PendingReason(t.key, string(obj.GetUID()), obj.GetAnnotations()) == plan.DeferReason(delivery.HoldStorm) {
				storm++
			}
			if s := plan.PendingSince(t.key, string(obj.GetUID()), obj.GetAnnotations(), now); oldest.IsZero() || s.Before(oldest) {
				oldest = s
			}
		}))
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Reading the rollouts for the metrics")
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = now.Sub(oldest).Seconds()
	}
	for uid, f := range t.inflight {
		if !seen[uid] && now.Before(f.until) {
			running++
		}
	}
	ch <- prometheus.MustNewConstMetric(rolloutsRunningDesc, prometheus.GaugeValue, float64(running))
	ch <- prometheus.MustNewConstMetric(rolloutsWaitingDesc, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(oldestWaitingDesc, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(heldByStormDesc, prometheus.GaugeValue, float64(storm))
}

// Register adds t to controller-runtime's metrics registry. A second
// manager in one process (tests) keeps the first collector: an
// AlreadyRegisteredError is no error. Any other error is the registry's.
func (t *Tracker) Register() error {
	err := ctrlmetrics.Registry.Register(t)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}
