package metrics

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The hooks of a workload controller's watches and reconciler that feed
// these metrics. None of them changes what is enqueued or decided.

// TrackChanges wraps h, the handler of ConfigMap or Secret events, so that
// every workload it enqueues for a change records when Reroll saw the change
// (ChangeSeen, for reroll_change_to_rollout_seconds). This is the one place that knows an
// event happened; Reconcile stays level-triggered and only reads the time
// back. Not changes: creates from the informers' initial list and resyncs
// (updates that keep the resourceVersion).
func (w *Workloads) TrackChanges(h handler.EventHandler) handler.EventHandler {
	return changeTracker{inner: h, seen: w.ChangeSeen}
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
// each change and adds the request later (internal/coalesce).
func (q seenQueue) Seen(req reconcile.Request) {
	q.seen(req.NamespacedName)
}

// CountMatched wraps the map function of a ConfigMap, Secret or CSI status
// change so that each workload it maps the change to counts once in
// reloader_workloads_matched_total (the debouncer may add a request twice:
// when it is held and when it is released).
func (w *Workloads) CountMatched(toRequests handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := toRequests(ctx, obj)
		w.Matched(len(reqs))
		return reqs
	}
}

// CountReconciles wraps r, a workload reconciler, so that each Reconcile
// is recorded in Reloader's reconcile, error and retry series (Reconciled).
func CountReconciles(r reconcile.Reconciler) reconcile.Reconciler {
	return countedReconciler{r}
}

type countedReconciler struct {
	inner reconcile.Reconciler
}

// Reconcile calls the workload reconciler and records its duration and
// result.
func (c countedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := c.inner.Reconcile(ctx, req)
	Reconciled(time.Since(start), err)
	return res, err
}
