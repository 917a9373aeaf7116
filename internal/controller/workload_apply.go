package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/source"
	"github.com/reroll/reroll/internal/workload"
)

// apply writes a plan: the workload's metadata (record, managed label,
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
		h, err := source.WaveHash(ctx, r.APIReader, r.Options.Scope, tr.Namespace, tr.Wave)
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
