package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
//  5. the workload, in one patch guarded by its resourceVersion (apply);
//     a failure tells with a RollFailed Event;
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
	if err := r.apply(ctx, obj, p); err != nil {
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
		log.V(1).Info("Leaving the rollout to the end of the coalescing window", "changes", p.Change.Summary())
		return true, ctrl.Result{}, nil
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
	return r.apply(ctx, obj, p)
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
		r.creations.forget(obj.GetUID())
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
		// Logged once per reason; each later check at V(1).
		l := log.V(1)
		if len(p.Annotations) > 0 {
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

// apply writes a plan's workload (step 5 of write): the workload's metadata (record, managed label,
// paused-at) and spec.paused, and, when the plan rolls, the rollout in one
// small write step per way. Every write of the workload is one patch guarded
// by its resourceVersion (workload.Patch), so a conflict makes Reconcile
// re-read and plan again. A trigger whose value needs data outside the cache
// (Wave's hash) is computed before it is set, whichever object carries it.
func (r *WorkloadReconciler) apply(ctx context.Context, obj client.Object, p plan.Plan) error {
	desired := obj.DeepCopyObject().(client.Object)
	for k, v := range p.Annotations {
		workload.SetAnnotation(desired, k, v)
	}
	for k, v := range p.Labels {
		workload.SetLabel(desired, k, v)
	}
	if pz, ok := r.Kind.(workload.Pausable); ok && (p.Pause.Pause || p.Pause.Resume) {
		pz.SetPaused(desired, p.Pause.Pause)
	}
	write := r.patch
	if len(p.Changes) > 0 || p.Outcome == plan.FirstSight {
		// The record of a change answered: a stale copy of the workload must
		// conflict rather than answer it twice. A first sight: a copy from
		// before the first record must conflict rather than write over a
		// record made since (an object recorded missing would then never
		// count as created).
		write = func(ctx context.Context, obj, desired client.Object) error {
			return workload.PatchGuarded(ctx, r.Client, obj, desired)
		}
	}
	if p.Outcome != plan.Roll {
		return write(ctx, obj, desired)
	}
	switch p.Roll.Way {
	case workload.ByTemplate:
		t, err := r.Kind.PodTemplate(desired)
		if err != nil {
			return err
		}
		if err := r.setTrigger(ctx, p.Roll.Trigger, t); err != nil {
			return err
		}
		if err := r.Kind.SetPodTemplate(desired, t); err != nil {
			return err
		}
		r.recordPatch(obj, desired, r.now())
	case workload.ByWorkloadRef:
		if err := r.rollWorkloadRef(ctx, obj, p.Roll); err != nil {
			return err
		}
	case workload.ByRestartAt:
		if err := workload.SetRestartAt(desired, p.Roll.RestartAt); err != nil {
			return err
		}
	case workload.ByJob:
		cj, ok := obj.(*batchv1.CronJob)
		if !ok {
			return fmt.Errorf("%w: %T is not a CronJob", workload.ErrShape, obj)
		}
		if err := workload.CreateJob(ctx, r.Client, cj, p.Roll.Job); err != nil {
			return err
		}
	case workload.ByRecreate:
		roller, ok := r.Kind.(workload.Roller)
		if !ok {
			return fmt.Errorf("%w: kind %s cannot re-create its objects", workload.ErrShape, r.Kind.Name())
		}
		// The Job's write step persists desired itself, on the new Job.
		ro := workload.Rollout{Original: obj, Desired: desired, Patch: write}
		if r.journal != nil {
			ro.Journal = r.journal
		}
		_, err := roller.Roll(ctx, r.Client, ro)
		return err
	}
	return write(ctx, obj, desired)
}

// rollWorkloadRef writes the trigger into the pod template of the
// Deployment an Argo Rollout's spec.workloadRef names (Argo watches it).
func (r *WorkloadReconciler) rollWorkloadRef(ctx context.Context, obj client.Object, roll plan.Rolling) error {
	ref := types.NamespacedName{Namespace: obj.GetNamespace(), Name: roll.Target}
	var d appsv1.Deployment
	if err := r.Client.Get(ctx, ref, &d); err != nil {
		return fmt.Errorf("reading Deployment %s, the workloadRef of %s %s: %w", ref, r.Kind.Name(), obj.GetName(), err)
	}
	desired := d.DeepCopy()
	if err := r.setTrigger(ctx, roll.Trigger, &desired.Spec.Template); err != nil {
		return err
	}
	return r.patch(ctx, &d, desired)
}

// setTrigger computes a deferred trigger value, then sets the trigger in t.
func (r *WorkloadReconciler) setTrigger(ctx context.Context, tr plan.Trigger, t *corev1.PodTemplateSpec) error {
	if tr.Deferred == plan.DeferredWaveHash {
		h, err := r.waveHash(ctx, tr.Namespace, tr.Wave)
		if err != nil {
			return err
		}
		tr.Value = r.planOptions().Compat(tr.WorkloadKind, tr.Namespace, tr.WorkloadName, h)
	}
	return tr.Set(t)
}

// patch writes desired over obj (workload.Patch).
func (r *WorkloadReconciler) patch(ctx context.Context, obj, desired client.Object) error {
	return workload.Patch(ctx, r.Client, obj, desired)
}
