package apply

import (
	"fmt"
	"sync"

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
// worker: Apply hands the notification to the endpoint's notify.Sender
// and returns; when the POST ends, the Sender's report wakes the workload up
// again (Applier.Notified, a channel source), and that reconcile, which
// plans the same change (same plan.Plan.Key), writes the record, or, after
// a failed POST, returns an error so that the workqueue's backoff retries.
// What has been sent is kept in memory only until the record is written; a
// restart in between loses it, so the new leader notifies again (a
// duplicate, never a loss).

// Notifications hold the notification on its way for each workload of one
// kind, keyed by the plan's Key: a newer change replaces an older one.
// observe reads them (State); Apply writes them.
type Notifications struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*notification
}

type notification struct {
	key   string
	state plan.NotifyState
	err   error
}

// NewNotifications returns empty Notifications.
func NewNotifications() *Notifications {
	return &Notifications{m: map[types.NamespacedName]*notification{}}
}

// State returns where the notification of key for nn is, and the error of
// its failed POST; plan.NotifyNone for a key other than the one on its way.
func (d *Notifications) State(nn types.NamespacedName, key string) (plan.NotifyState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		return e.state, e.err
	}
	return plan.NotifyNone, nil
}

func (d *Notifications) start(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[nn] = &notification{key: key, state: plan.NotifyPending}
}

// finish records the end of the POST of key; one of a replaced key is
// dropped.
func (d *Notifications) finish(nn types.NamespacedName, key string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.m[nn]
	if e == nil || e.key != key {
		return
	}
	e.state, e.err = plan.NotifyAccepted, nil
	if err != nil {
		e.state, e.err = plan.NotifyFailed, err
	}
}

// Drop forgets whatever is held for a workload that no longer exists; a
// nil d holds nothing.
func (d *Notifications) Drop(nn types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, nn)
}

// Forget forgets the notification of key for nn, once recorded or failed.
func (d *Notifications) Forget(nn types.NamespacedName, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[nn]; e != nil && e.key == key {
		delete(d.m, nn)
	}
}

// notify carries out a plan's notification step (plan.Decide decided it
// from the state of the notification of p.Key): it hands the notification
// to the endpoint (NotifySend), or forgets one whose POST failed and
// returns the error (NotifyFail), which the workqueue retries with
// backoff. The POST's end wakes the workload up (wake).
func (a *Applier) notify(obj client.Object, p plan.Plan) error {
	nn := client.ObjectKeyFromObject(obj)
	if p.Notify == plan.NotifyFail {
		a.Notifications.Forget(nn, p.Key)
		return fmt.Errorf("notifying %s: %w", a.Endpoint.Endpoint(), p.NotifyFailure)
	}
	summary := p.Change.Summary()
	ref := obj.DeepCopyObject().(client.Object)
	report := notify.Report{
		Retrying: func(err error) {
			a.Recorder.Eventf(ref, corev1.EventTypeWarning, plan.ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
			a.Metrics.Failed(nn, sourceKinds(p.Changes))
		},
		Done: func(err error) {
			if err != nil {
				a.Recorder.Eventf(ref, corev1.EventTypeWarning, plan.ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
				a.Metrics.Failed(nn, sourceKinds(p.Changes))
			}
			a.Notifications.finish(nn, p.Key, err)
			a.wake(nn)
		},
	}
	a.Notifications.start(nn, p.Key)
	if err := a.Endpoint.Send(*p.Notification, report); err != nil {
		a.Notifications.Forget(nn, p.Key)
		a.Recorder.Eventf(obj, corev1.EventTypeWarning, plan.ReasonRollFailed, "Could not notify after %s: %s", summary, err.Error())
		a.recordFailure(obj, p)
		return err
	}
	return nil
}

// wake enqueues a workload whose notification ended; it never blocks (a full
// channel leaves it to plan.NotifyPoll).
func (a *Applier) wake(nn types.NamespacedName) {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
	select {
	case a.Notified <- event.GenericEvent{Object: o}:
	default:
	}
}
