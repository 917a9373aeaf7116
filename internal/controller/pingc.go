package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/workload"
)

// setupPinGC registers the garbage collector of versioned configuration's
// copies and their rotation receipts (internal/pingc), over the workload
// kinds Reroll handles.
func setupPinGC(mgr ctrl.Manager, opts Options, kinds []workload.Kind) error {
	r := &pingc.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: opts.Store, Key: opts.Key, Kinds: kinds,
		Recorder: boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
	}
	// One worker: a namespace's pass is a few lists, and namespaces with
	// copies are few next to the workloads.
	return r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1})
}
