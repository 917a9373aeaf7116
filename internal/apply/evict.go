package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// RestartUnderWay is how often a workload (or group of annotated pods)
// with a restart by eviction under way is reconciled even when no pod
// event arrives, as a safety net.
const RestartUnderWay = time.Minute

// evict carries out a decision whose record was written (obj is the
// workload as read; the record's patch below carries only what changed): it evicts the decided pods, writes the record again
// without them, and reports. Evicting before recording is what makes a kill
// between the two harmless: the next decision finds the pod terminating or
// gone and never evicts it again (and the UID precondition keeps a
// replacement of the same name safe).
func (a *Applier) evict(ctx context.Context, obj client.Object, d eviction.Decision, changes string, now time.Time) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if d.Started > 0 {
		log.Info(AuditEvictingWorkload, "pods", d.Started, "changes", changes)
		a.Recorder.Eventf(obj, corev1.EventTypeNormal, plan.ReasonEvicting, "Evicting %d pods after %s", d.Started, changes)
	}
	for _, name := range d.Bare {
		log.Info("Not evicting pod without owner", "pod", name)
		a.Recorder.Eventf(obj, corev1.EventTypeWarning, plan.ReasonNotEvicted, "Not evicting pod %s: it has no owner that would re-create it; restart it by hand to read the new data", name)
	}
	if d.Done {
		log.Info("Restarted workload by eviction")
		a.Recorder.Event(obj, corev1.EventTypeNormal, plan.ReasonEvicted, "Evicted every pod that read the old data; the replacements are Ready")
	}
	if d.Progress == nil {
		return ctrl.Result{}, nil
	}
	progress, requeue, failure := EvictPods(ctx, a.Client, a.Recorder, a.Kind.Name(), obj.GetNamespace(), d, now, func(string) runtime.Object { return obj })
	result := ctrl.Result{RequeueAfter: requeue}
	desired := obj.DeepCopyObject().(client.Object)
	workload.SetAnnotation(desired, eviction.ProgressAnnotation, progress.String())
	if err := workload.Patch(ctx, a.Client, obj, desired); err != nil {
		return ctrl.Result{}, err
	}
	if failure != nil {
		return ctrl.Result{}, failure
	}
	if result.RequeueAfter == 0 {
		result.RequeueAfter = RestartUnderWay
	}
	if d.Waiting != "" {
		log.V(1).Info("Restart by eviction waiting", "reason", d.Waiting)
	}
	return result, nil
}

// EvictPods is the one eviction loop, of workloads and of groups of
// annotated pods: it evicts d's pods in order, one refusal or failure at a
// time (the next pods wait for the retry, so that the order stays one by
// one), counts each in the metrics of kind, and tells of a blocked or
// failed eviction in an Event on the object on names for the pod (none
// when nil). It returns the progress left to record (d.Progress without
// the pods evicted, blocked since now at the first refusal), how soon to
// retry a refused eviction (0 when none was), and the error of a failed
// one.
func EvictPods(ctx context.Context, c client.Client, rec record.EventRecorder, kind, namespace string, d eviction.Decision, now time.Time, on func(pod string) runtime.Object) (*eviction.Progress, time.Duration, error) {
	log := ctrl.LoggerFrom(ctx)
	progress := d.Progress
	var requeue time.Duration
	var failure error
	tell := func(pod, eventtype, reason, messageFmt string, args ...any) {
		if obj := on(pod); obj != nil {
			rec.Eventf(obj, eventtype, reason, messageFmt, args...)
		}
	}
	for _, ref := range d.Evict {
		err := eviction.Evict(ctx, c, namespace, ref)
		var blocked *eviction.BlockedError
		switch {
		case errors.As(err, &blocked):
			metrics.Eviction(kind, metrics.EvictionBlocked)
			if progress.BlockedSince == nil {
				progress = progress.Without()
				progress.BlockedSince = &now
				log.Info("Eviction blocked by a PodDisruptionBudget", "pod", ref.Name, "detail", blocked.Budget)
				tell(ref.Name, corev1.EventTypeWarning, plan.ReasonEvictionBlocked, "Eviction of pod %s blocked by %s; retrying", ref.Name, blockerOf(blocked))
			}
			requeue = eviction.RetryDelay(*progress.BlockedSince, now, blocked.RetryAfter)
		case err != nil:
			metrics.Eviction(kind, metrics.EvictionError)
			tell(ref.Name, corev1.EventTypeWarning, plan.ReasonEvictionFailed, "Could not evict pod %s: %s", ref.Name, err.Error())
			failure = err
		default:
			metrics.Eviction(kind, metrics.EvictionEvicted)
			if progress.BlockedSince != nil {
				metrics.EvictionUnblocked(kind, now.Sub(*progress.BlockedSince))
			}
			log.Info(AuditEvicted, "pod", ref.Name)
			progress = progress.Without(ref.UID)
		}
		if err != nil {
			break
		}
	}
	return progress, requeue, failure
}

// blockerOf names what refused an eviction, for the Event.
func blockerOf(b *eviction.BlockedError) string {
	if name := eviction.BudgetName(b.Budget); name != "" {
		return fmt.Sprintf("PodDisruptionBudget %s (%s)", name, b.Budget)
	}
	if b.Budget != "" {
		return "a PodDisruptionBudget (" + b.Budget + ")"
	}
	return "the API server (too many requests)"
}
