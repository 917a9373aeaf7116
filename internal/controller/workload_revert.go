package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// ReasonTemplateReverted is plan.ReasonTemplateReverted.
const ReasonTemplateReverted = plan.ReasonTemplateReverted

// templateInObject reports whether obj's pod template lives in obj itself,
// the only case in which Reroll can tell who put it back.
func (r *WorkloadReconciler) templateInObject(obj client.Object) bool {
	switch r.Kind.(type) {
	case workload.PodOwner, workload.CronJob, workload.Job:
		return false
	}
	if tr, ok := r.Kind.(workload.TemplateReader); ok {
		if _, elsewhere := tr.TemplateFrom(obj); elsewhere {
			return false
		}
	}
	return true
}

// checkRevert detects a revert of Reroll's last pod template change
// (revert.Detect on PatchAnnotation) and, when it finds one, records who
// reverted it in RevertedAnnotation and drops PatchAnnotation (through set,
// the annotations to write), counts it and emits ReasonTemplateReverted.
// managedFields are not cached, so only a suspected revert costs a read of
// the workload from the API server. Once RevertedAnnotation is set,
// workload.ActionOf stops the template changes.
func (r *WorkloadReconciler) checkRevert(ctx context.Context, obj client.Object, template *corev1.PodTemplateSpec, now time.Time, p *plan.Plan) error {
	set := p.Annotations
	if revert.ParseReverted(obj.GetAnnotations()[revert.RevertedAnnotation]) != nil {
		return nil
	}
	patch, err := revert.ParsePatch(obj.GetAnnotations()[revert.PatchAnnotation])
	if err != nil {
		// A damaged record only loses the detection of one revert.
		set[revert.PatchAnnotation] = ""
		return nil
	}
	if !r.templateInObject(obj) || !revert.Detect(patch, revert.Fingerprint(template), now) {
		return nil
	}
	fresh := r.Kind.New()
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return fmt.Errorf("reading the field managers of %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	if revert.ParseReverted(fresh.GetAnnotations()[revert.RevertedAnnotation]) != nil {
		// Recorded already; the cache is behind that write.
		return nil
	}
	rv := revert.Reverted{Manager: revert.Manager(fresh.GetManagedFields(), FieldManager), At: now}
	set[revert.RevertedAnnotation] = rv.String()
	set[revert.PatchAnnotation] = ""
	// Told once the record is written (reportRevert): a write that
	// conflicts and is retried must not tell twice.
	p.Events = append(p.Events, plan.Event{Type: corev1.EventTypeWarning, Reason: ReasonTemplateReverted,
		Note: fmt.Sprintf("%s put back the pod template Reroll changed %s ago; Reroll no longer changes this template. %s",
			revert.ManagerName(rv.Manager), now.Sub(patch.At).Round(time.Second), revert.Advice)})
	return nil
}

// reportRevert counts and logs a revert that checkRevert recorded in p,
// once p was written.
func (r *WorkloadReconciler) reportRevert(ctx context.Context, p plan.Plan) {
	rv := revert.ParseReverted(p.Annotations[revert.RevertedAnnotation])
	if rv == nil {
		return
	}
	metrics.TemplateReverted(r.Kind.Name())
	ctrl.LoggerFrom(ctx).Info("Pod template change reverted by another field manager; no longer changing it", "manager", rv.Manager)
}

// recordPatch writes into desired, whose pod template Reroll is about to
// change, the record revert.Detect reads: fingerprints of the template
// before (in obj) and after (in desired).
func (r *WorkloadReconciler) recordPatch(obj, desired client.Object, now time.Time) {
	if !r.templateInObject(obj) {
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
