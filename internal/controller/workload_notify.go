package controller

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/plan"
)

// With --webhook-url a change is posted to the notification endpoint instead
// of a rollout, and the record is written only after the endpoint accepted
// it: delivery is at least once. The POST does not hold a reconcile worker:
// Reconcile hands the notification to the endpoint's notify.Sender and
// returns; when the delivery ends, the Sender's report wakes the workload up
// again (a channel source), and that reconcile, which plans the same change
// (same plan.Plan.Key), writes the record, or, after a failed delivery,
// returns an error so that the workqueue's backoff retries. What has been
// delivered is kept in memory only until the record is written; a restart
// in between loses it, so the new leader notifies again (a duplicate, never
// a loss).

// deliveryPoll is how often a workload whose notification is on its way is
// reconciled anyway, in case its wake-up was lost (a full channel).
const deliveryPoll = 5 * time.Second

// deliveryState is where one notification is.
type deliveryState int

const (
	deliveryNone deliveryState = iota
	deliveryPending
	deliveryAccepted
	deliveryFailed
)

// deliveries holds the notification on its way for each workload of one
// kind, keyed by the plan's Key: a newer change replaces an older one.
type deliveries struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*delivery
}

type delivery struct {
	key   string
	state deliveryState
	err   error
}

func newDeliveries() *deliveries {
	return &deliveries{m: map[types.NamespacedName]*delivery{}}
}

// state returns where the notification of key for nn is; deliveryNone for a
// key other than the one on its way.
func (d *deliveries) state(nn types.NamespacedName, key string) (deliveryState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		return e.state, e.err
	}
	return deliveryNone, nil
}

func (d *deliveries) start(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[nn] = &delivery{key: key, state: deliveryPending}
}

// finish records the end of the delivery of key; one of a replaced key is
// dropped.
func (d *deliveries) finish(nn types.NamespacedName, key string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.m[nn]
	if e == nil || e.key != key {
		return
	}
	e.state, e.err = deliveryAccepted, nil
	if err != nil {
		e.state, e.err = deliveryFailed, err
	}
}

// drop forgets whatever is held for a workload that no longer exists.
func (d *deliveries) drop(nn types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, nn)
}

func (d *deliveries) forget(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		delete(d.m, nn)
	}
}

// deliver moves the plan's notification along: it queues it the first
// time, and reports whether the endpoint accepted it, so the record may be
// written. While it is on its way, wait is how long to wait at most for the
// wake-up. A failed delivery is an error, retried by the workqueue.
func (r *WorkloadReconciler) deliver(obj client.Object, p plan.Plan) (accepted bool, wait time.Duration, err error) {
	nn := client.ObjectKeyFromObject(obj)
	state, lastErr := r.deliveries.state(nn, p.Key)
	switch state {
	case deliveryAccepted:
		return true, 0, nil
	case deliveryPending:
		return false, deliveryPoll, nil
	case deliveryFailed:
		r.deliveries.forget(nn, p.Key)
		return false, 0, fmt.Errorf("notifying %s: %w", r.endpoint.Endpoint(), lastErr)
	}
	summary := p.Change.Summary()
	ref := obj.DeepCopyObject().(client.Object)
	report := notify.Report{
		Retrying: func(err error) {
			r.Recorder.Eventf(ref, corev1.EventTypeWarning, ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
			r.metrics.Failed(nn, sourceKinds(p.Changes))
		},
		Done: func(err error) {
			if err != nil {
				r.Recorder.Eventf(ref, corev1.EventTypeWarning, ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
				r.metrics.Failed(nn, sourceKinds(p.Changes))
			}
			r.deliveries.finish(nn, p.Key, err)
			r.wake(nn)
		},
	}
	r.deliveries.start(nn, p.Key)
	if err := r.endpoint.Send(*p.Notification, report); err != nil {
		r.deliveries.forget(nn, p.Key)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
		r.recordFailure(obj, p)
		return false, 0, err
	}
	return false, deliveryPoll, nil
}

// wake enqueues a workload whose delivery ended; it never blocks (a full
// channel leaves it to deliveryPoll).
func (r *WorkloadReconciler) wake(nn types.NamespacedName) {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
	select {
	case r.delivered <- event.GenericEvent{Object: o}:
	default:
	}
}
