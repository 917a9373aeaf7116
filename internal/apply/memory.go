package apply

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/baseline"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// storedBaseline returns the baseline of obj kept signed in Reroll's
// namespace, "" when none.
func (a *Applier) storedBaseline(ctx context.Context, obj client.Object) (string, error) {
	if a.Baselines == nil {
		return "", nil
	}
	rec, _, err := a.Baselines.Get(ctx, obj.GetNamespace(), a.Kind.Name(), obj.GetName(), obj.GetUID())
	return rec, err
}

// keepBaseline keeps p.Record, a deferred record, as obj's baseline: in
// memory, and, when the first-sight rule would roll obj after a restart
// for what it does not read (p.BaselineNeeded), signed in Reroll's
// namespace before this reconcile ends (unless kept there already).
// Without a store, or without room in it, the record goes on the
// workload, as without DeferRecord.
func (a *Applier) keepBaseline(ctx context.Context, obj client.Object, p plan.Plan) error {
	rec := p.Record.String()
	if p.BaselineNeeded {
		stored, err := a.storedBaseline(ctx, obj)
		if err != nil {
			return err
		}
		if rec != stored {
			err = state.ErrBaselinesFull
			if a.Baselines != nil {
				err = a.Baselines.Put(ctx, obj.GetNamespace(), baseline.Entry{Kind: a.Kind.Name(), Name: obj.GetName(), UID: string(obj.GetUID()), Record: rec})
			}
			if errors.Is(err, state.ErrBaselinesFull) {
				desired := obj.DeepCopyObject().(client.Object)
				workload.SetAnnotation(desired, plan.RecordAnnotation, rec)
				workload.SetAnnotation(desired, plan.KeyAnnotation, a.Key.ID())
				if err := workload.PatchGuarded(ctx, a.Client, obj, desired); err != nil {
					return err
				}
				a.Creations.Forget(obj.GetUID())
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	a.Creations.Keep(obj.GetUID(), rec)
	return nil
}

// dropBaseline removes obj's entry, if any, from the signed baselines once
// obj carries its own record or opted out (opting in again starts from
// first sight). A failure only leaves a stale entry: it is logged, not
// retried.
func (a *Applier) dropBaseline(ctx context.Context, obj client.Object) {
	stored, err := a.storedBaseline(ctx, obj)
	if err == nil && stored != "" {
		err = a.Baselines.Put(ctx, obj.GetNamespace(), baseline.Entry{Kind: a.Kind.Name(), Name: obj.GetName()})
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Removing the baseline of a recorded or opted-out workload")
	}
}
