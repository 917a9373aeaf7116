package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/apply"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// write is the only writer of a reconcile: it carries out plan p of obj,
// which plan.Decide returned, in this order, each step only once the one
// before it succeeded:
//  1. the halt records of change sets the breaker halted, then their
//     Events and alert (a kill after this step decides again and finds
//     the halt);
//  2. the Warnings (and the log lines of what the plan ignored);
//  3. stop on a hold (p.Hold), a workload being deleted, Waiting or
//     Refused (those two write only Reroll's state);
//  4. the notification (p.Notify): send it, or wait until the endpoint
//     accepted it, and write nothing else meanwhile;
//  5. the workload, in one patch guarded by its resourceVersion, one
//     small write step per way of rolling (apply.Writer); a failure tells
//     with a RollFailed Event;
//  6. Reroll's memory (first sight, baselines, notifications) and the
//     rollout bound;
//  7. the Events, the alert, the audit line and the metrics, only now
//     that the write succeeded;
//  8. the evictions of a restart by eviction (evict), pod by pod, then
//     their progress. That is the one second write of the workload in a
//     reconcile: the record names the pods to evict before any is
//     evicted, so that a kill between the two never evicts a pod twice
//     nor forgets one; the progress patch then drops the pods evicted.
func (r *WorkloadReconciler) write(ctx context.Context, obj client.Object, p plan.Plan, w written) (ctrl.Result, error) {
	for _, h := range p.Halts {
		r.halt(ctx, h)
	}
	r.warn(ctx, obj, p)
	r.recordReferences(obj, p.References)
	if stop, result, err := r.stop(ctx, obj, p); stop {
		return result, err
	}
	switch p.Notify {
	case plan.NotifySend, plan.NotifyFail:
		if err := r.notify(obj, p); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: p.Requeue}, nil
	case plan.NotifyWait:
		return ctrl.Result{RequeueAfter: p.Requeue}, nil
	}
	if err := r.writer().Workload(ctx, obj, p); err != nil {
		if len(p.Changes) > 0 && !apierrors.IsConflict(err) {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not roll after %s: %s", p.Change.Summary(), err.Error())
			r.recordFailure(obj, p)
		}
		return ctrl.Result{}, err
	}
	if err := r.remember(ctx, obj, p, w); err != nil {
		return ctrl.Result{}, err
	}
	r.recordOutcome(obj, p)
	r.reportRevert(ctx, p)
	r.tell(ctx, obj, p)
	if p.Eviction != nil {
		return r.evict(ctx, obj, *p.Eviction, p.Change.Summary(), w.now)
	}
	return ctrl.Result{RequeueAfter: p.Requeue}, nil
}

// written is what write needs beyond the plan.
type written struct {
	// bounded is set when the rollout counts against the concurrent
	// rollout bound (the reconcile holds its lock).
	bounded bool
	// progress is what the workload's status says of its latest rollout
	// (plan.Input.Progress); timeout is the rollout timeout.
	progress *workload.Progress
	timeout  time.Duration
	// now is the time of the decision.
	now time.Time
}

// warn emits the plan's Warnings, and logs what it ignored or replaced.
func (r *WorkloadReconciler) warn(ctx context.Context, obj client.Object, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx)
	if len(p.Problems) > 0 {
		log.Info("Ignoring malformed annotations", "error", strings.ReplaceAll(errors.Join(p.Problems...).Error(), "\n", "; "))
	}
	if p.DamagedRecord != nil {
		log.Info("Replacing unreadable record", "error", p.DamagedRecord.Error())
	}
	if p.RecordKeyChanged {
		log.Info("Recording again under the current digest key", "recordKey", obj.GetAnnotations()[KeyAnnotation], "key", r.Options.Key.ID())
	}
	for _, e := range p.Warnings {
		r.Recorder.Event(obj, e.Type, e.Reason, e.Note)
	}
}

// stop reports whether the writer stops before the notification and the
// workload: a hold, a workload being deleted, or a plan that writes only
// Reroll's state (Waiting, Refused), which it writes.
func (r *WorkloadReconciler) stop(ctx context.Context, obj client.Object, p plan.Plan) (bool, ctrl.Result, error) {
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
		return true, ctrl.Result{RequeueAfter: p.Requeue}, r.applyState(ctx, obj, p)
	case plan.Refused:
		// The Warning Event says why; retrying costs the same until the
		// annotations or the namespace's names change, which reconciles.
		log.Info("Not rolling: list patterns cost too much to match", "annotation", p.OptIn.MatchBudgetExceeded())
		r.recordOutcome(obj, p)
		return true, ctrl.Result{RequeueAfter: p.Requeue}, r.applyState(ctx, obj, p)
	}
	return false, ctrl.Result{}, nil
}

// applyState writes the state annotations of a plan that rolls nothing and
// records nothing (Waiting, Refused): a pending change cleared, a finished
// or timed-out rollout no longer stamped, forged state removed.
func (r *WorkloadReconciler) applyState(ctx context.Context, obj client.Object, p plan.Plan) error {
	if len(p.Annotations) == 0 {
		return nil
	}
	return r.writer().Workload(ctx, obj, p)
}

// writer writes the workloads of r's kind (internal/apply).
func (r *WorkloadReconciler) writer() apply.Writer {
	w := apply.Writer{Client: r.Client, Kind: r.Kind, Now: r.now}
	if r.journal != nil {
		w.Journal = r.journal
	}
	return w
}

// remember updates, once the plan is written, Reroll's memory of the
// workload (its baseline, first sight, the notification) and the rollout
// bound (a rollout started, a slot freed).
func (r *WorkloadReconciler) remember(ctx context.Context, obj client.Object, p plan.Plan, w written) error {
	if p.Deferred {
		if err := r.keepBaseline(ctx, obj, p); err != nil {
			return err
		}
	}
	if p.Annotations[plan.RecordAnnotation] != "" || p.Outcome == plan.NotOptedIn {
		// Recorded (or forgotten): the first-sight rule is done with it.
		r.creations.Forget(obj.GetUID())
		r.dropBaseline(ctx, obj)
	}
	if stamp := p.Annotations[plan.RolledAtAnnotation]; w.bounded && stamp != "" {
		r.rollouts.Started(r.Kind, obj, stamp, plan.RolloutDeadline(*w.progress, w.timeout))
	}
	if stamp, ok := p.Annotations[plan.RolledAtAnnotation]; ok && stamp == "" && r.rollouts != nil {
		// A slot freed: the oldest waiting workloads need not wait for
		// their next check.
		if err := r.rollouts.WakeOldest(ctx, r.Client); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Waking workloads waiting for a rollout slot")
		}
	}
	if p.Outcome == plan.Notify {
		// Recorded: the next change is a new notification.
		r.notifications.forget(client.ObjectKeyFromObject(obj), p.Key)
	}
	return nil
}

// invalidShape tells that obj's shape does not match the configured
// template path: retrying cannot help until the object or the flag
// changes.
func (r *WorkloadReconciler) invalidShape(obj client.Object, err error) error {
	r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidWorkload, "%s", err.Error())
	return reconcile.TerminalError(err)
}

// tell logs and reports a plan that was written: its Events, in order, and
// the alert of a rollout.
func (r *WorkloadReconciler) tell(ctx context.Context, obj client.Object, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx)
	summary := p.Change.Summary()
	switch p.Outcome {
	case plan.Notify:
		log.Info(AuditNotified, "changes", summary)
	case plan.NotRolled:
		log.Info("Not rolling workload", "changes", summary, "reason", p.Roll.Why)
	case plan.Roll:
		log.Info(AuditRolled, "changes", summary, "way", string(p.Roll.Way), "strategy", string(r.Options.Strategy), "dialect", string(p.OptIn.Dialect))
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
		r.Recorder.Event(obj, e.Type, e.Reason, e.Note)
	}
	if p.Alert != nil && r.Options.Alerter != nil {
		r.Options.Alerter.Alert(ctx, *p.Alert)
	}
}

// patch writes desired over obj (workload.Patch).
func (r *WorkloadReconciler) patch(ctx context.Context, obj, desired client.Object) error {
	return workload.Patch(ctx, r.Client, obj, desired)
}
