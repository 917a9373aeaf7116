package pingc

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
)

// ControllerName names the collector's controller (logs, metrics).
const ControllerName = "pin-gc"

// SetupWithManager registers r with mgr: a controller of its own, with
// its own workqueue, keyed by namespace and fed by the store's events of
// copies (a copy created, written or deleted) and of data changes (a
// source changed: a version may have become previous). A namespace
// without copies costs one scan of the store's names there and no
// request; one with copies is looked at again every Options.Period.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	b := ctrl.NewControllerManagedBy(mgr).Named(ControllerName).WithOptions(opts)
	watched := 0
	for _, kind := range kinds {
		if !r.Store.Watches(kind) {
			continue
		}
		src, err := r.Store.Source(kind, handler.EnqueueRequestsFromMapFunc(toNamespace), relevant())
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
		watched++
	}
	if watched == 0 {
		// Neither kind is watched (--resources-to-ignore): no copy can be
		// made, none collected.
		return nil
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("creating the copies' garbage collector: %w", err)
	}
	return nil
}

// toNamespace maps an object to the request of its namespace.
func toNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace()}}}
}

// relevant passes the events of copies, and the data changes of any
// object (a source whose content changed makes its copies previous
// versions: their rotation starts).
func relevant() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return pin.IsCopy(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return pin.IsCopy(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if pin.IsCopy(e.ObjectNew) || pin.IsCopy(e.ObjectOld) {
				return true
			}
			before, ok1 := digest.Of(e.ObjectOld)
			after, ok2 := digest.Of(e.ObjectNew)
			return !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
