package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
)

// ReasonTemplateReverted is plan.ReasonTemplateReverted.
const ReasonTemplateReverted = plan.ReasonTemplateReverted

// reportRevert counts and logs a revert that plan.Decide recorded in p,
// once p was written.
func (r *WorkloadReconciler) reportRevert(ctx context.Context, p plan.Plan) {
	rv := revert.ParseReverted(p.Annotations[revert.RevertedAnnotation])
	if !p.Reverted || rv == nil {
		return
	}
	metrics.TemplateReverted(r.Kind.Name())
	ctrl.LoggerFrom(ctx).Info("Pod template change reverted by another field manager; no longer changing it", "manager", rv.Manager)
}
