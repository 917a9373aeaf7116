package apply

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
)

// workloadRef writes the trigger into the pod template of the Deployment
// an Argo Rollout's spec.workloadRef names (Argo watches it), in a patch of
// its own; the Rollout's metadata is written after it.
func (w Writer) workloadRef(ctx context.Context, obj client.Object, roll plan.Rolling) error {
	ref := types.NamespacedName{Namespace: obj.GetNamespace(), Name: roll.Target}
	var d appsv1.Deployment
	if err := w.Client.Get(ctx, ref, &d); err != nil {
		return fmt.Errorf("reading Deployment %s, the workloadRef of %s %s: %w", ref, w.Kind.Name(), obj.GetName(), err)
	}
	desired := d.DeepCopy()
	if err := roll.Trigger.Set(&desired.Spec.Template); err != nil {
		return err
	}
	return w.patch(ctx, &d, desired)
}
