package controller

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/baseline"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// firstSightHold returns how long to hold back a rollout of the first-sight
// rule: until Options.CoalesceWindow has passed since the latest change it
// answers (counted from the end of that change's second, the API's
// resolution), so that the rest of the change's burst joins this one
// rollout, as the ConfigMap and Secret watches' debounce does for a
// recorded workload. Like the debounce, it is bounded: never later than the
// coalescing max-wait after the change the workload was first held for
// (the burst's first change Reroll knows of), however long the burst goes
// on; and the reconcile the debounce started itself (burstEnded) is not
// held at all, since its burst is over or cut at max-wait already. 0 means
// now; never more than the window and a second.
func (r *WorkloadReconciler) firstSightHold(obj client.Object, p plan.Plan, now time.Time, burstEnded bool) time.Duration {
	w := r.Options.CoalesceWindow
	if w <= 0 || burstEnded || p.FirstSightChanged.IsZero() || len(p.Changes) == 0 {
		return 0
	}
	wait := min(p.FirstSightChanged.Add(time.Second+w).Sub(now), time.Second+w)
	if wait <= 0 {
		return 0
	}
	first := r.creations.HeldSince(obj.GetUID(), p.FirstSightChanged)
	return min(wait, first.Add(max(r.coalescing().MaxWait, w)).Sub(now))
}

// defersRecord reports whether Reroll leaves the record off workloads it
// has not rolled (Options.DeferRecord): only with the first-sight rule,
// which stands in for the baseline after a restart; without the admission
// webhook; and without --reload-on-delete, since a deletion made while no
// Reroll runs leaves nothing in the API for the rule to find (a record
// finds it: the object it holds is gone).
func (r *WorkloadReconciler) defersRecord() bool {
	return r.Options.DeferRecord && r.creations != nil && !r.Options.Admission.Enabled && !r.Options.ReloadOnDelete
}

// baselineOf returns the baseline of obj, a workload without a record: the
// one kept in memory, else the one kept signed in Reroll's namespace.
func (r *WorkloadReconciler) baselineOf(ctx context.Context, obj client.Object) (string, error) {
	if b := r.creations.Baseline(obj.GetUID()); b != "" {
		return b, nil
	}
	return r.storedBaseline(ctx, obj)
}

// storedBaseline returns the baseline of obj kept signed in Reroll's
// namespace, "" when none.
func (r *WorkloadReconciler) storedBaseline(ctx context.Context, obj client.Object) (string, error) {
	if r.baselines == nil {
		return "", nil
	}
	rec, _, err := r.baselines.Get(ctx, obj.GetNamespace(), r.Kind.Name(), obj.GetName(), obj.GetUID())
	return rec, err
}

// keepBaseline keeps p.Record, a deferred record, as obj's baseline: in
// memory, and, when the first-sight rule would roll obj after a restart
// for what it does not read (p.BaselineNeeded), signed in Reroll's
// namespace before this reconcile ends (unless kept there already).
// Without a store, or without room in it, the record goes on the
// workload, as without DeferRecord.
func (r *WorkloadReconciler) keepBaseline(ctx context.Context, obj client.Object, p plan.Plan) error {
	rec := p.Record.String()
	if p.BaselineNeeded {
		stored, err := r.storedBaseline(ctx, obj)
		if err != nil {
			return err
		}
		if rec != stored {
			err = state.ErrBaselinesFull
			if r.baselines != nil {
				err = r.baselines.Put(ctx, obj.GetNamespace(), baseline.Entry{Kind: r.Kind.Name(), Name: obj.GetName(), UID: string(obj.GetUID()), Record: rec})
			}
			if errors.Is(err, state.ErrBaselinesFull) {
				desired := obj.DeepCopyObject().(client.Object)
				workload.SetAnnotation(desired, plan.RecordAnnotation, rec)
				workload.SetAnnotation(desired, plan.KeyAnnotation, r.Options.Key.ID())
				if err := workload.PatchGuarded(ctx, r.Client, obj, desired); err != nil {
					return err
				}
				r.creations.Forget(obj.GetUID())
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	r.creations.Keep(obj.GetUID(), rec)
	return nil
}

// dropBaseline removes obj's entry, if any, from the signed baselines once
// obj carries its own record or opted out (opting in again starts from
// first sight). A failure only leaves a stale entry: it is logged, not
// retried.
func (r *WorkloadReconciler) dropBaseline(ctx context.Context, obj client.Object) {
	stored, err := r.storedBaseline(ctx, obj)
	if err == nil && stored != "" {
		err = r.baselines.Put(ctx, obj.GetNamespace(), baseline.Entry{Kind: r.Kind.Name(), Name: obj.GetName()})
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Removing the baseline of a recorded or opted-out workload")
	}
}
