package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// The small hooks that Reconcile calls to feed internal/metrics. None of
// them changes a decision.

// trackChanges wraps h, the handler of ConfigMap or Secret events, so that
// every workload it enqueues for a change records when Reroll saw the change
// (for reroll_change_to_rollout_seconds). This is the one place that knows an
// event happened; Reconcile stays level-triggered and only reads the time
// back. Not changes: creates from the informers' initial list and resyncs
// (updates that keep the resourceVersion).
func (r *WorkloadReconciler) trackChanges(h handler.EventHandler) handler.EventHandler {
	return changeTracker{inner: h, seen: r.metrics.ChangeSeen}
}

type changeTracker struct {
	inner handler.EventHandler
	seen  func(types.NamespacedName)
}

func (c changeTracker) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if !e.IsInInitialList {
		q = seenQueue{q, c.seen}
	}
	c.inner.Create(ctx, e, q)
}

func (c changeTracker) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
		q = seenQueue{q, c.seen}
	}
	c.inner.Update(ctx, e, q)
}

func (c changeTracker) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.inner.Delete(ctx, e, seenQueue{q, c.seen})
}

func (c changeTracker) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.inner.Generic(ctx, e, q)
}

// seenQueue records each request added to the queue as a change seen.
type seenQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	seen func(types.NamespacedName)
}

func (q seenQueue) Add(req reconcile.Request) {
	q.seen(req.NamespacedName)
	q.TypedRateLimitingInterface.Add(req)
}

// AddAfter records the change as seen now, whatever the delay.
func (q seenQueue) AddAfter(req reconcile.Request, d time.Duration) {
	q.seen(req.NamespacedName)
	q.TypedRateLimitingInterface.AddAfter(req, d)
}

// Seen records the change as seen now; the coalescing handler calls it at
// each change and adds the request later (changeSeer).
func (q seenQueue) Seen(req reconcile.Request) {
	q.seen(req.NamespacedName)
}

// countMatched wraps the map function of a ConfigMap, Secret or CSI status
// change so that each workload it maps the change to counts once in
// reloader_workloads_matched_total (the debouncer may add a request twice:
// when it is held and when it is released).
func (r *WorkloadReconciler) countMatched(toRequests handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := toRequests(ctx, obj)
		r.metrics.Matched(len(reqs))
		return reqs
	}
}

// recordReferences sets the workload's tracked references (nil when it
// opted out).
func (r *WorkloadReconciler) recordReferences(obj client.Object, refs []reference.Reference) {
	var c metrics.Counts
	for _, ref := range refs {
		switch ref.Kind {
		case reference.Secret:
			c.Secrets++
		case reference.ConfigMap:
			c.ConfigMaps++
		}
	}
	r.metrics.References(client.ObjectKeyFromObject(obj), c)
}

// recordOutcome records how a reconcile that wrote (or had nothing to write)
// ended: a rollout (or its notification, or a change the kind does not
// restart for), a first sight, or a change that rolled nothing.
func (r *WorkloadReconciler) recordOutcome(obj client.Object, p plan.Plan) {
	nn := client.ObjectKeyFromObject(obj)
	switch {
	case p.Outcome == plan.DeferredRollout:
		// Not rolled yet: the change's age keeps counting.
	case len(p.Changes) > 0:
		r.metrics.Rolled(nn, sourceKinds(p.Changes), p.Outcome == plan.Notify)
	case p.Outcome == plan.Refused:
		r.metrics.Skipped(nn, metrics.MatchCostExceeded)
	case p.Outcome == plan.FirstSight || p.Outcome == plan.DamagedRecord:
		r.metrics.Settled(nn)
	case len(p.HeldBy) > 0:
		r.metrics.Skipped(nn, skipReason(p.HeldBy[len(p.HeldBy)-1]))
	default:
		r.metrics.Skipped(nn, metrics.NoConsumedKeyChanged)
	}
}

// recordFailure records a rollout whose write or notification failed.
func (r *WorkloadReconciler) recordFailure(obj client.Object, p plan.Plan) {
	r.metrics.Failed(client.ObjectKeyFromObject(obj), sourceKinds(p.Changes))
}

// skipReason is the reroll_skipped_total reason for a change held back by
// the flag (plan.Plan.HeldBy).
func skipReason(flag string) string {
	switch flag {
	case "--reload-on-create":
		return metrics.CreateNotEnabled
	case "--reload-on-delete":
		return metrics.DeleteNotEnabled
	}
	// A SecretProviderClass status that came or went with a pod.
	return metrics.NoConsumedKeyChanged
}

func sourceKinds(changes []plan.Diff) []string {
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		out = append(out, string(c.Ref.Kind))
	}
	return out
}

// countedReconciler records each Reconcile of the workload reconciler in
// Reloader's reconcile, error and retry series.
type countedReconciler struct {
	*WorkloadReconciler
}

// Reconcile calls the workload reconciler and records its duration and
// result.
func (c countedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := c.WorkloadReconciler.Reconcile(ctx, req)
	metrics.Reconciled(time.Since(start), err)
	return res, err
}
