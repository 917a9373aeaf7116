package apply

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/changeset"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/firstsight"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// Alerter is told of each rollout after it is made. Alert must return
// quickly and never fail the rollout: it queues, it does not send.
type Alerter interface {
	Alert(ctx context.Context, c change.Change)
}

// Applier is the only writer of a workload's reconcile, for the workloads
// of one kind: Apply carries out the plan plan.Decide returned. The
// controller builds it once per kind; a nil field turns off what it
// writes (noted at each).
type Applier struct {
	// Client writes to the API server (and reads the cache for a slot of
	// the rollout bound).
	Client client.Client
	// Kind is the workload kind.
	Kind workload.Kind
	// Recorder emits the Events on the workload (and on the objects of a
	// halt).
	Recorder record.EventRecorder
	// Key is the current digest key (named in a log line when a record
	// moves to it; versioned config's copies are named and signed under
	// it).
	Key digest.Key
	// Reader reads from the API server: the sources of versioned config's
	// copies, whose values the cache does not keep.
	Reader client.Reader
	// Strategy is the trigger strategy, named in the audit line of a
	// rollout.
	Strategy trigger.Strategy
	// Alerter is told of each rollout and halt; nil sends no alerts.
	Alerter Alerter
	// Sets record the halts of change sets; nil without safe delivery.
	Sets *changeset.Sets
	// Metrics record rollouts, skips and references; nil records nothing.
	Metrics *metrics.Workloads
	// Endpoint posts to the notification endpoint; Notifications track
	// what it was given, and Notified carries the wake-ups of the POSTs
	// that ended. All nil without an endpoint.
	Endpoint      *notify.Sender
	Notifications *Notifications
	Notified      chan<- event.GenericEvent
	// Journal keeps the manifests of Jobs being re-created (Jobs only;
	// nil keeps them in memory).
	Journal *state.JobJournal
	// Creations is the first-sight memory; nil keeps none.
	Creations *firstsight.Memory
	// Baselines keep, signed in Reroll's namespace, the baselines
	// DeferRecord must keep durably; nil keeps none there.
	Baselines *state.Baselines
	// Rollouts count the rollouts of the concurrent rollout bound; nil
	// for kinds not counted.
	Rollouts *rollout.Tracker
	// Copies finds versioned config's copies that exist already (the
	// ConfigMap and Secret store), and KnownCopies remembers those proven
	// from an API read, shared by every kind's Applier: a copy shared by
	// a fan-out then costs no request per workload. Nil asks the API
	// server each time.
	Copies      CopyStore
	KnownCopies *KnownCopies
	// CopyLabels are the label keys a copy takes from its source
	// (Copier.CarryLabels).
	CopyLabels []string
	// OwnWrites notes the writes of settled plans, whose watch events the
	// controller need not reconcile; nil notes none.
	OwnWrites *OwnWrites
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Written is what Apply needs beyond the plan.
type Written struct {
	// Bounded is set when the rollout counts against the concurrent
	// rollout bound (the reconcile holds its lock).
	Bounded bool
	// Progress is what the workload's status says of its latest rollout
	// (plan.Input.Progress); Timeout is the rollout timeout.
	Progress *workload.Progress
	Timeout  time.Duration
	// Now is the time of the decision.
	Now time.Time
}

// Apply is the only writer of a reconcile: it carries out plan p of obj,
// which plan.Decide returned, in this order, each step only once the one
// before it succeeded:
//  1. the halt records: first those kept in memory since the API refused
//     them (changeset.Sets.RecordHeld, at most every 10 seconds each),
//     then those of the change sets the breaker just halted, with their
//     Events and alert (a kill after this step decides again and finds
//     the halt);
//  2. the Warnings (and the log lines of what the plan ignored);
//  3. stop on a hold (p.Hold), a workload being deleted, Waiting or
//     Refused (those two write only Reroll's state);
//  4. the notification (p.Notify): send it, or wait until the endpoint
//     accepted it, and write nothing else meanwhile;
//  5. the workload, in one patch guarded by its resourceVersion, one
//     small write step per way of rolling (Writer); a failure tells with
//     a RollFailed Event;
//  6. Reroll's memory (first sight, baselines, notifications) and the
//     rollout bound;
//  7. the Events, the alert, the audit line and the metrics, only now
//     that the write succeeded;
//  8. the evictions of a restart by eviction (evict), pod by pod, then
//     their progress. That is the one second write of the workload in a
//     reconcile: the record names the pods to evict before any is
//     evicted, so that a kill between the two never evicts a pod twice
//     nor forgets one; the progress patch then drops the pods evicted.
//
// It returns the requeue of the plan (or of the evictions), and the error
// of the first write that failed.
func (a *Applier) Apply(ctx context.Context, obj client.Object, p plan.Plan, w Written) (ctrl.Result, error) {
	if a.Sets != nil {
		a.Sets.RecordHeld(ctx)
	}
	for _, h := range p.Halts {
		a.halt(ctx, h)
	}
	a.warn(ctx, obj, p)
	a.recordReferences(obj, p.References)
	if stop, result, err := a.stop(ctx, obj, p); stop {
		return result, err
	}
	switch p.Notify {
	case plan.NotifySend, plan.NotifyFail:
		if err := a.notify(obj, p); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: p.Requeue}, nil
	case plan.NotifyWait:
		return ctrl.Result{RequeueAfter: p.Requeue}, nil
	}
	wr := a.writer()
	if p.Pin != nil {
		pinned, err := a.copies(ctx, obj, p)
		if err != nil {
			return ctrl.Result{}, err
		}
		wr.Pinned = &pinned
	}
	if err := wr.Workload(ctx, obj, p); err != nil {
		if len(p.Changes) > 0 && !apierrors.IsConflict(err) {
			a.Recorder.Eventf(obj, corev1.EventTypeWarning, plan.ReasonRollFailed, "Could not roll after %s: %s", p.Change.Summary(), err.Error())
			a.recordFailure(obj, p)
		}
		return ctrl.Result{}, err
	}
	if err := a.remember(ctx, obj, p, w); err != nil {
		return ctrl.Result{}, err
	}
	a.recordOutcome(obj, p)
	a.reportRevert(ctx, p)
	if wr.Pinned != nil {
		// Told once the write that rolled unpinned succeeded: a write
		// retried after a conflict makes the copies again.
		a.unpinned(ctx, obj, wr.Pinned.Failed)
	}
	a.tell(ctx, obj, p)
	if p.Eviction != nil {
		return a.evict(ctx, obj, *p.Eviction, p.Change.Summary(), w.Now)
	}
	return ctrl.Result{RequeueAfter: p.Requeue}, nil
}

// InvalidShape tells, in an InvalidWorkload Warning Event on obj, that
// obj's shape does not match the configured template path (err), and
// returns err as a reconcile.TerminalError: retrying cannot help until
// the object or the flag changes.
func (a *Applier) InvalidShape(obj client.Object, err error) error {
	a.Recorder.Eventf(obj, corev1.EventTypeWarning, plan.ReasonInvalidWorkload, "%s", err.Error())
	return reconcile.TerminalError(err)
}

// warn emits the plan's Warnings, and logs what it ignored or replaced.
func (a *Applier) warn(ctx context.Context, obj client.Object, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx)
	if len(p.Problems) > 0 {
		log.Info("Ignoring malformed annotations", "error", strings.ReplaceAll(errors.Join(p.Problems...).Error(), "\n", "; "))
	}
	if p.DamagedRecord != nil {
		log.Info("Replacing unreadable record", "error", p.DamagedRecord.Error())
	}
	if p.RecordKeyChanged {
		log.Info("Recording again under the current digest key", "recordKey", obj.GetAnnotations()[plan.KeyAnnotation], "key", a.Key.ID())
	}
	for _, e := range p.Warnings {
		a.Recorder.Event(obj, e.Type, e.Reason, e.Note)
	}
}

// stop reports whether the writer stops before the notification and the
// workload: a hold, a workload being deleted, or a plan that writes only
// Reroll's state (Waiting, Refused), which it writes.
func (a *Applier) stop(ctx context.Context, obj client.Object, p plan.Plan) (bool, ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	switch p.Hold {
	case plan.HoldCoalescing:
		log.V(1).Info("Leaving the rollout to the end of the coalescing window", "changes", p.Change.Summary(), "wait", p.Requeue.String())
		return true, ctrl.Result{RequeueAfter: p.Requeue}, nil
	case plan.HoldFirstSight:
		log.V(1).Info("Holding a first-sight rollout for the coalescing window", "changes", p.Change.Summary(), "wait", p.Requeue.String())
		return true, ctrl.Result{RequeueAfter: p.Requeue}, nil
	}
	switch p.Outcome {
	case plan.Deleting:
		return true, ctrl.Result{}, nil
	case plan.Waiting:
		log.Info("Waiting for required references before rolling (Wave dialect)", "missing", strings.Join(p.Missing, ", "))
		// Only Reroll's state goes (a pending change, a finished rollout):
		// the record stays, so the change rolls once it is complete.
		return true, ctrl.Result{RequeueAfter: p.Requeue}, a.applyState(ctx, obj, p)
	case plan.Refused:
		// The Warning Event says why; retrying costs the same until the
		// annotations or the namespace's names change, which reconciles.
		log.Info("Not rolling: list patterns cost too much to match", "annotation", p.OptIn.MatchBudgetExceeded())
		a.recordOutcome(obj, p)
		return true, ctrl.Result{RequeueAfter: p.Requeue}, a.applyState(ctx, obj, p)
	}
	return false, ctrl.Result{}, nil
}

// applyState writes the state annotations of a plan that rolls nothing and
// records nothing (Waiting, Refused): a pending change cleared, a finished
// or timed-out rollout no longer stamped, forged state removed.
func (a *Applier) applyState(ctx context.Context, obj client.Object, p plan.Plan) error {
	if len(p.Annotations) == 0 {
		return nil
	}
	return a.writer().Workload(ctx, obj, p)
}

// copies makes the copies of p's pinning (Copier); the workload reads
// the source of each that could not be made (unpinned tells of them).
func (a *Applier) copies(ctx context.Context, obj client.Object, p plan.Plan) (Pinned, error) {
	t, err := a.Kind.PodTemplate(obj)
	if err != nil {
		return Pinned{}, err
	}
	c := Copier{Client: a.Client, Reader: a.Reader, Store: a.Copies, Known: a.KnownCopies, Key: a.Key, CarryLabels: a.CopyLabels, Now: a.Now}
	return c.Copies(ctx, obj, t, p.Pin)
}

// unpinned tells, with a ReasonUnpinned Warning Event and a log line, of
// each copy that could not be made (failed): the workload reads that
// source itself.
func (a *Applier) unpinned(ctx context.Context, obj client.Object, failed []error) {
	for _, e := range failed {
		ctrl.LoggerFrom(ctx).Info("Not pinning: the copy could not be made", "error", e.Error())
		a.Recorder.Eventf(obj, corev1.EventTypeWarning, plan.ReasonUnpinned, "Not pinned, the pods read the source itself: %s", e.Error())
	}
}

// writer writes the workloads of a's kind (Writer).
func (a *Applier) writer() Writer {
	w := Writer{Client: a.Client, Kind: a.Kind, Now: a.now, OwnWrites: a.OwnWrites}
	if a.Journal != nil {
		w.Journal = a.Journal
	}
	return w
}

func (a *Applier) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// remember updates, once the plan is written, Reroll's memory of the
// workload (its baseline, first sight, the notification) and the rollout
// bound (a rollout started, a slot freed).
func (a *Applier) remember(ctx context.Context, obj client.Object, p plan.Plan, w Written) error {
	if p.Deferred {
		if err := a.keepBaseline(ctx, obj, p); err != nil {
			return err
		}
	}
	if p.Annotations[plan.RecordAnnotation] != "" || p.Outcome == plan.NotOptedIn {
		// Recorded (or forgotten): the first-sight rule is done with it.
		a.Creations.Forget(obj.GetUID())
		a.dropBaseline(ctx, obj)
	}
	if p.OptInWaits && a.Rollouts != nil {
		a.Rollouts.WaitOptIn(a.Kind, obj)
	}
	if stamp := p.Annotations[plan.RolledAtAnnotation]; w.Bounded && stamp != "" {
		a.Rollouts.Started(a.Kind, obj, stamp, plan.RolloutDeadline(*w.Progress, w.Timeout))
	}
	if stamp, ok := p.Annotations[plan.RolledAtAnnotation]; ok && stamp == "" && a.Rollouts != nil {
		// A slot freed: the oldest waiting workloads need not wait for
		// their next check.
		if err := a.Rollouts.WakeOldest(ctx, a.Client); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Waking workloads waiting for a rollout slot")
		}
	}
	if p.Outcome == plan.Notify {
		// Recorded: the next change is a new notification.
		a.Notifications.Forget(client.ObjectKeyFromObject(obj), p.Key)
	}
	return nil
}

// tell logs and reports a plan that was written: its Events, in order, and
// the alert of a rollout.
func (a *Applier) tell(ctx context.Context, obj client.Object, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx)
	summary := p.Change.Summary()
	switch p.Outcome {
	case plan.Notify:
		log.Info(AuditNotified, "changes", summary)
	case plan.NotRolled:
		log.Info("Not rolling workload", "changes", summary, "reason", p.Roll.Why)
	case plan.Roll:
		log.Info(AuditRolled, "changes", summary, "way", string(p.Roll.Way), "strategy", string(a.Strategy), "dialect", string(p.OptIn.Dialect))
	case plan.DeferredRollout:
		// Logged at Info when the deferral changes (plan.Decide then adds
		// its Event); each later check, and the pending mark signed again
		// before it lapses, at V(1).
		l := log.V(1)
		if len(p.Events) > 0 {
			l = log.V(0)
		}
		l.Info("Deferred rollout", "changes", summary, "reason", string(p.Deferral.Reason), "detail", p.Deferral.Detail, "since", p.Deferral.Since, "until", p.Deferral.Until)
	case plan.FirstSight:
		if p.Deferred {
			// Nothing written: one line per workload at install would be
			// noise (DeferRecord).
			log.V(1).Info("Took consumed data as baseline on first sight", "references", len(p.References))
			break
		}
		log.Info("Recorded consumed data on first sight", "references", len(p.References))
	case plan.Skipped:
		log.V(1).Info("Not rolling for create or delete", "flags", strings.Join(p.HeldBy, ","))
	}
	switch {
	case p.Pause.Pause:
		log.Info("Paused Deployment for its pause period", "period", p.Pause.Period.String())
	case p.Pause.Resume:
		log.Info("Resumed Deployment after its pause period")
	}
	for _, e := range p.Events {
		a.Recorder.Event(obj, e.Type, e.Reason, e.Note)
	}
	if p.Alert != nil && a.Alerter != nil {
		a.Alerter.Alert(ctx, *p.Alert)
	}
}
