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
// it: notification is at least once. The POST does not hold a reconcile
// worker: Reconcile hands the notification to the endpoint's notify.Sender
// and returns; when the POST ends, the Sender's report wakes the workload up
// again (a channel source), and that reconcile, which plans the same change
// (same plan.Plan.Key), writes the record, or, after a failed POST,
// returns an error so that the workqueue's backoff retries. What has been
// sent is kept in memory only until the record is written; a restart
// in between loses it, so the new leader notifies again (a duplicate, never
// a loss).

// notifyPoll is how often a workload whose notification is on its way is
// reconciled anyway, in case its wake-up was lost (a full channel).
const notifyPoll = 5 * time.Second

// notifyState is where one notification is.
type notifyState int

const (
	notifyNone notifyState = iota
	notifyPending
	notifyAccepted
	notifyFailed
)

// notifications holds the notification on its way for each workload of one
// kind, keyed by the plan's Key: a newer change replaces an older one.
type notifications struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*notification
}

type notification struct {
	key   string
	state notifyState
	err   error
}

func newNotifications() *notifications {
	return &notifications{m: map[types.NamespacedName]*notification{}}
}

// state returns where the notification of key for nn is; notifyNone for a
// key other than the one on its way.
func (d *notifications) state(nn types.NamespacedName, key string) (notifyState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		return e.state, e.err
	}
	return notifyNone, nil
}

func (d *notifications) start(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[nn] = &notification{key: key, state: notifyPending}
}

// finish records the end of the POST of key; one of a replaced key is
// dropped.
func (d *notifications) finish(nn types.NamespacedName, key string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.m[nn]
	if e == nil || e.key != key {
		return
	}
	e.state, e.err = notifyAccepted, nil
	if err != nil {
		e.state, e.err = notifyFailed, err
	}
}

// drop forgets whatever is held for a workload that no longer exists.
func (d *notifications) drop(nn types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, nn)
}

func (d *notifications) forget(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		delete(d.m, nn)
	}
}

// notifyEndpoint moves the plan's notification along: it queues it the first
// time, and reports whether the endpoint accepted it, so the record may be
// written. While it is on its way, wait is how long to wait at most for the
// wake-up. A failed POST is an error, retried by the workqueue.
func (r *WorkloadReconciler) notifyEndpoint(obj client.Object, p plan.Plan) (accepted bool, wait time.Duration, err error) {
	nn := client.ObjectKeyFromObject(obj)
	state, lastErr := r.notifications.state(nn, p.Key)
	switch state {
	case notifyAccepted:
		return true, 0, nil
	case notifyPending:
		return false, notifyPoll, nil
	case notifyFailed:
		r.notifications.forget(nn, p.Key)
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
			r.notifications.finish(nn, p.Key, err)
			r.wake(nn)
		},
	}
	r.notifications.start(nn, p.Key)
	if err := r.endpoint.Send(*p.Notification, report); err != nil {
		r.notifications.forget(nn, p.Key)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
		r.recordFailure(obj, p)
		return false, 0, err
	}
	return false, notifyPoll, nil
}

// wake enqueues a workload whose notification ended; it never blocks (a full
// channel leaves it to notifyPoll).
func (r *WorkloadReconciler) wake(nn types.NamespacedName) {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
	select {
	case r.notified <- event.GenericEvent{Object: o}:
	default:
	}
}
