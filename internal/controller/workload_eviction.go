package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/index"
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
	ReasonTemplateReverted = plan.ReasonTemplateReverted
)

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
	if err := r.Client.List(ctx, list, client.InNamespace(pod.GetNamespace()), client.MatchingFields{index.Evicting: "true"}); err != nil {
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
