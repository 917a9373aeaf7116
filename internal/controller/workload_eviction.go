package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// Event reasons of restarts by eviction, on the workload (or pod owner);
// plan.Reason* document them.
const (
	ReasonEvicting         = plan.ReasonEvicting
	ReasonEvicted          = plan.ReasonEvicted
	ReasonEvictionBlocked  = plan.ReasonEvictionBlocked
	ReasonNotEvicted       = plan.ReasonNotEvicted
	ReasonEvictionFailed   = plan.ReasonEvictionFailed
	ReasonEvictionDisabled = plan.ReasonEvictionDisabled
)

// evictingIndex is the field index, on every workload kind, of the
// workloads with a restart by eviction under way ("true"): the pod watch
// looks them up to find which workload a pod event concerns, a cache lookup
// that finds nothing for all the other workloads.
const evictingIndex = "reroll.dev/evicting"

// restartUnderWay is how often a workload with a restart by eviction under
// way is reconciled even when no pod event arrives, as a safety net.
const restartUnderWay = time.Minute

// podsOf returns, from the cache, the pods a restart by eviction of obj
// concerns: for a --evict-owner kind, the pods obj controls and the bare
// pods its spec.selector matches; for other workloads, the pods their
// spec.selector matches.
func (r *WorkloadReconciler) podsOf(ctx context.Context, obj client.Object) ([]corev1.Pod, error) {
	var sel labels.Selector
	if ls := workload.Selector(obj); ls != nil {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("reading spec.selector of %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
		}
		sel = s
	}
	if owner, ok := r.Kind.(workload.PodOwner); ok {
		pods, err := owner.Pods(ctx, r.Client, obj)
		if err != nil || sel == nil {
			return pods, err
		}
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing pods of %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
		}
		for _, p := range list.Items {
			if metav1.GetControllerOf(&p) == nil {
				pods = append(pods, p)
			}
		}
		return pods, nil
	}
	if sel == nil || sel.Empty() {
		// Without a selector no pod can be told to be the workload's.
		return nil, nil
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods of %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return list.Items, nil
}

// evict carries out a decision whose record was written (obj is the
// workload as read; the record's patch below carries only what changed): it evicts the decided pods, writes the record again
// without them, and reports. Evicting before recording is what makes a kill
// between the two harmless: the next decision finds the pod terminating or
// gone and never evicts it again (and the UID precondition keeps a
// replacement of the same name safe).
func (r *WorkloadReconciler) evict(ctx context.Context, obj client.Object, d eviction.Decision, changes string, now time.Time) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if d.Started > 0 {
		log.Info(AuditEvictingWorkload, "pods", d.Started, "changes", changes)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonEvicting, "Evicting %d pods after %s", d.Started, changes)
	}
	for _, name := range d.Bare {
		log.Info("Not evicting pod without owner", "pod", name)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonNotEvicted, "Not evicting pod %s: it has no owner that would re-create it; restart it by hand to read the new data", name)
	}
	if d.Done {
		log.Info("Restarted workload by eviction")
		r.Recorder.Event(obj, corev1.EventTypeNormal, ReasonEvicted, "Evicted every pod that read the old data; the replacements are Ready")
	}
	if d.Progress == nil {
		return ctrl.Result{}, nil
	}
	progress, requeue, failure := evictPods(ctx, r.Client, r.Recorder, r.Kind.Name(), obj.GetNamespace(), d, now, func(string) runtime.Object { return obj })
	result := ctrl.Result{RequeueAfter: requeue}
	desired := obj.DeepCopyObject().(client.Object)
	workload.SetAnnotation(desired, eviction.ProgressAnnotation, progress.String())
	if err := r.patch(ctx, obj, desired); err != nil {
		return ctrl.Result{}, err
	}
	if failure != nil {
		return ctrl.Result{}, failure
	}
	if result.RequeueAfter == 0 {
		result.RequeueAfter = restartUnderWay
	}
	if d.Waiting != "" {
		log.V(1).Info("Restart by eviction waiting", "reason", d.Waiting)
	}
	return result, nil
}

// evictPods is the one eviction loop, of workloads and of groups of
// annotated pods: it evicts d's pods in order, one refusal or failure at a
// time (the next pods wait for the retry, so that the order stays one by
// one), counts each in the metrics of kind, and tells of a blocked or
// failed eviction in an Event on the object on names for the pod (none
// when nil). It returns the progress left to record (d.Progress without
// the pods evicted, blocked since now at the first refusal), how soon to
// retry a refused eviction (0 when none was), and the error of a failed
// one.
func evictPods(ctx context.Context, c client.Client, rec record.EventRecorder, kind, namespace string, d eviction.Decision, now time.Time, on func(pod string) runtime.Object) (*eviction.Progress, time.Duration, error) {
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
				tell(ref.Name, corev1.EventTypeWarning, ReasonEvictionBlocked, "Eviction of pod %s blocked by %s; retrying", ref.Name, blockerOf(blocked))
			}
			requeue = eviction.RetryDelay(*progress.BlockedSince, now, blocked.RetryAfter)
		case err != nil:
			metrics.Eviction(kind, metrics.EvictionError)
			tell(ref.Name, corev1.EventTypeWarning, ReasonEvictionFailed, "Could not evict pod %s: %s", ref.Name, err.Error())
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

// indexEvicting is the evictingIndex function.
func indexEvicting(obj client.Object) []string {
	if _, ok := obj.GetAnnotations()[eviction.ProgressAnnotation]; ok {
		return []string{"true"}
	}
	return nil
}

// requestsForPod maps a pod event to the workloads of r's kind it may
// concern: those in the pod's namespace with a restart by eviction under
// way whose pods include it, and, for a --evict-owner kind, the pod's
// controller (its references live in its pods, so a new pod may change
// what it reads).
func (r *WorkloadReconciler) requestsForPod(ctx context.Context, pod client.Object) []reconcile.Request {
	var out []reconcile.Request
	seen := map[types.NamespacedName]bool{}
	add := func(nn types.NamespacedName) {
		if !seen[nn] {
			seen[nn] = true
			out = append(out, reconcile.Request{NamespacedName: nn})
		}
	}
	owner, isOwner := r.Kind.(workload.PodOwner)
	ref := metav1.GetControllerOf(pod)
	if isOwner && ref != nil && ref.Kind == owner.GVK.Kind && ref.APIVersion == owner.GVK.GroupVersion().String() {
		add(types.NamespacedName{Namespace: pod.GetNamespace(), Name: ref.Name})
	}
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(pod.GetNamespace()), client.MatchingFields{evictingIndex: "true"}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads with a restart by eviction under way", "namespace", pod.GetNamespace())
		return out
	}
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		w, ok := item.(client.Object)
		if !ok {
			return nil
		}
		if ls := workload.Selector(w); ls != nil {
			if sel, err := metav1.LabelSelectorAsSelector(ls); err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.GetLabels())) {
				add(client.ObjectKeyFromObject(w))
			}
		}
		if ref != nil && ref.UID == w.GetUID() {
			add(client.ObjectKeyFromObject(w))
		}
		return nil
	})
	return out
}

// podChanged passes the pod events a restart by eviction waits for:
// creation, deletion, a change of the Ready condition, and the start of
// termination.
func podChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*corev1.Pod)
			after, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			b, a := eviction.FromPod(before), eviction.FromPod(after)
			return b.Ready != a.Ready || b.Terminating != a.Terminating
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
