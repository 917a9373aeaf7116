package controller

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultCoalesceWindow is the default of Options.CoalesceWindow
// (--coalesce-window): long enough to hold a `kubectl apply` or a Helm
// upgrade that changes a workload's ConfigMaps and Secrets one request after
// another, short next to the seconds a rollout itself takes.
const DefaultCoalesceWindow = 500 * time.Millisecond

// enqueueCoalesced is the event handler of the ConfigMap and Secret watches:
// it maps an event to the workloads that consume the object, as
// handler.EnqueueRequestsFromMapFunc does, but enqueues them window later.
//
// The workqueue holds each request once and, for a request that is already
// waiting, keeps the earliest ready time (client-go's delaying queue and
// controller-runtime's priority queue both do), so every change to the
// objects of one workload in the window after the first one is seen by a
// single Reconcile, which then rolls the workload once. The price is window
// of extra latency per rollout. A window of 0 enqueues at once, leaving only
// the queue's de-duplication of requests not yet processed.
//
// Creates from an informer's initial list are dropped: every workload is
// enqueued by its own watch's initial list, and controller-runtime starts
// no worker before all of a controller's watches have synced, so those
// creates would only repeat an index lookup per object at start-up.
func enqueueCoalesced(window time.Duration, toRequests handler.MapFunc) handler.EventHandler {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range toRequests(ctx, obj) {
			if window > 0 {
				q.AddAfter(req, window)
			} else {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				return
			}
			enqueue(ctx, e.Object, q)
		},
		// A ConfigMap's or Secret's name never changes, so the new object
		// maps to the same workloads as the old one.
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}
