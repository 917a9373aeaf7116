package observe

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/workload"
)

// Pods returns, from the cache c, the pods a restart by eviction of obj,
// a workload of kind, concerns: for a --evict-owner kind, the pods obj
// controls and the bare pods its spec.selector matches; for other
// workloads, the pods their spec.selector matches (none without a
// selector). It returns the error of a malformed selector or of the list.
func Pods(ctx context.Context, c client.Client, kind workload.Kind, obj client.Object) ([]corev1.Pod, error) {
	var sel labels.Selector
	if ls := workload.Selector(obj); ls != nil {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("reading spec.selector of %s %s/%s: %w", kind.Name(), obj.GetNamespace(), obj.GetName(), err)
		}
		sel = s
	}
	if owner, ok := kind.(workload.PodOwner); ok {
		pods, err := owner.Pods(ctx, c, obj)
		if err != nil || sel == nil {
			return pods, err
		}
		var list corev1.PodList
		if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing pods of %s %s/%s: %w", kind.Name(), obj.GetNamespace(), obj.GetName(), err)
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
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods of %s %s/%s: %w", kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return list.Items, nil
}
