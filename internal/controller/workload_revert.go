package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
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

// recordPatch writes into desired, whose pod template Reroll is about to
// change, the record revert.Detect reads: fingerprints of the template
// before (in obj) and after (in desired).
func (r *WorkloadReconciler) recordPatch(obj, desired client.Object, now time.Time) {
	if !workload.TemplateInObject(r.Kind, obj) {
		return
	}
	before, err1 := r.Kind.PodTemplate(obj)
	after, err2 := r.Kind.PodTemplate(desired)
	if err1 != nil || err2 != nil {
		return
	}
	p := revert.Patch{Before: revert.Fingerprint(before), After: revert.Fingerprint(after), At: now}
	if p.Before != p.After {
		workload.SetAnnotation(desired, revert.PatchAnnotation, p.String())
	}
}
