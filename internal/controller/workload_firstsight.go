package controller

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/baseline"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// creations remembers the revision at which a workload's creation was seen
// on the watch, until its first sight is recorded: it orders, within the
// API's one-second resolution, the workload's creation against the changes
// the store saw (plan.Input.Since). It is memory only: after a restart the
// rule orders by seconds, which can only add a rollout, never lose one.
//
// It also keeps, per workload whose first-sight rollout is held for the
// coalescing window (firstSightHold), the change it was first held for, so
// that a burst that goes on cannot hold it past the max-wait.
type creations struct {
	mu    sync.Mutex
	byUID map[types.UID]uint64
	held  map[types.UID]time.Time
	// baseline is, per workload Reroll leaves unrecorded
	// (Options.DeferRecord), the record it would have written on it.
	baseline map[types.UID]string
}

func newCreations() *creations {
	return &creations{byUID: map[types.UID]uint64{}, held: map[types.UID]time.Time{}, baseline: map[types.UID]string{}}
}

// noted is a predicate that passes every event, and first notes each
// workload created while the informer watched (not those of its initial
// list) and forgets each deleted one. As a predicate it runs before the
// request is queued, so the first sight always finds the note.
func (c *creations) noted() predicate.Predicate {
	if c == nil {
		return predicate.Funcs{}
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if rv, err := strconv.ParseUint(e.Object.GetResourceVersion(), 10, 64); err == nil && !e.IsInInitialList {
				c.mu.Lock()
				c.byUID[e.Object.GetUID()] = rv
				c.mu.Unlock()
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			c.forget(e.Object.GetUID())
			return true
		},
	}
}

// since returns the revision of obj's creation when it was seen and
// nothing wrote obj's spec or opt-in in a later second (writtenAt is
// plan.WrittenAt), else 0.
func (c *creations) since(obj client.Object, writtenAt time.Time) uint64 {
	if c == nil || writtenAt.Unix() != obj.GetCreationTimestamp().Unix() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byUID[obj.GetUID()]
}

// baselineOf returns the baseline kept in memory of workload uid, "" when
// none (Options.DeferRecord).
func (c *creations) baselineOf(uid types.UID) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.baseline[uid]
}

// keep keeps record as the baseline of workload uid, in place of a record
// on it: the first-sight rule is done with it while this process runs.
func (c *creations) keep(uid types.UID, record string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byUID, uid)
	delete(c.held, uid)
	c.baseline[uid] = record
}

// heldSince returns when the first-sight hold of workload uid began: the
// change at which it was first held, at, or the one noted at an earlier
// hold, until the workload is forgotten (recorded, opted out or deleted).
// A nil creations notes nothing and returns at.
func (c *creations) heldSince(uid types.UID, at time.Time) time.Time {
	if c == nil {
		return at
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.held[uid]; ok {
		return first
	}
	c.held[uid] = at
	return at
}

func (c *creations) forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.byUID, uid)
	delete(c.held, uid)
	delete(c.baseline, uid)
	c.mu.Unlock()
}

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
	first := r.creations.heldSince(obj.GetUID(), p.FirstSightChanged)
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
	if b := r.creations.baselineOf(obj.GetUID()); b != "" {
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
				r.creations.forget(obj.GetUID())
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	r.creations.keep(obj.GetUID(), rec)
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
