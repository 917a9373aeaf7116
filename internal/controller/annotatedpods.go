package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/apply"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/observe"
	"github.com/reroll/reroll/internal/podgroup"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// annotatedPods restarts by eviction the pods that opt in with their own
// annotations and whose controller is a kind Reroll neither handles nor
// re-templates (internal/podgroup says how, and where their records live:
// Options.PodRecords). The request of a group is its namespace and, as
// name, the UID of its controller (the pod's own for a bare pod).
type annotatedPods struct {
	// opts are Reroll's options; client reads the cache.
	opts   Options
	client client.Client
	// sources read the ConfigMaps and Secrets the pods consume (the store).
	sources *observe.Deps
	// records are the groups' records; write is the groups' writer.
	records podgroup.Records
	write   apply.PodGroup
	// handled are the owner kinds Reroll restarts some other way.
	handled map[schema.GroupKind]bool
}

// setupAnnotatedPods registers the controller of annotated pods with mgr;
// kinds are the workload kinds Reroll handles, whose pods it leaves alone.
func setupAnnotatedPods(mgr ctrl.Manager, opts Options, kinds []workload.Kind) error {
	records := podgroup.Records{Entries: state.NewEntries(mgr.GetClient(), mgr.GetAPIReader(), opts.PodRecords, opts.Key, "the pod records")}
	a := &annotatedPods{
		opts: opts, client: mgr.GetClient(), records: records,
		sources: &observe.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: opts.Store},
		write: apply.PodGroup{Client: mgr.GetClient(), Records: records,
			Recorder: boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}}, //nolint:staticcheck // see WorkloadReconciler.Recorder
		handled: workload.PodControllers(kinds),
	}
	dataChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := digest.Of(e.ObjectOld)
		after, ok2 := digest.Of(e.ObjectNew)
		return !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys)
	}}
	b := ctrl.NewControllerManagedBy(mgr).Named("annotated-pods").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(a.requestsForPod), builder.WithPredicates(podChanged())).
		WithOptions(opts.controllerOptions(mgr.GetLogger()))
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
		if !opts.Store.Watches(kind) {
			continue
		}
		src, err := opts.Store.Source(kind, handler.EnqueueRequestsFromMapFunc(a.requestsInNamespace), dataChanged)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	if err := b.Complete(a); err != nil {
		return fmt.Errorf("creating the annotated pods controller: %w", err)
	}
	return nil
}

// group returns the UID of the group of pod (podgroup.Of).
func (a *annotatedPods) group(pod client.Object) types.UID {
	return podgroup.Of(pod, a.handled)
}

// requestsForPod maps a pod event to its group, when the pod opts in.
func (a *annotatedPods) requestsForPod(_ context.Context, pod client.Object) []reconcile.Request {
	if g := a.group(pod); g != "" && podgroup.OptedIn(pod, a.opts.Annotations) {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: string(g)}}}
	}
	return nil
}

// requestsInNamespace maps a ConfigMap or Secret event to every group of
// annotated pods in its namespace (a scan of the cached pods there; the
// group's reconcile tells whether it reads the object).
func (a *annotatedPods) requestsInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list corev1.PodList
	if err := a.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing pods", "namespace", obj.GetNamespace())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, r := range a.requestsForPod(ctx, &list.Items[i]) {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Reconcile plans the group of annotated pods req names as it would a
// workload restarted by eviction, in the three steps of a workload's
// reconcile: podgroup.Observe (reads), podgroup.Decide, and
// apply.PodGroup (the only writer). Events go to the pods.
func (a *annotatedPods) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if in, err := a.opts.Scope.Includes(ctx, a.client, req.Namespace); err != nil || !in {
		return ctrl.Result{}, err
	}
	o, err := podgroup.Observe(ctx, a.client, a.records, a.handled, a.opts.Annotations, req)
	if err != nil {
		return ctrl.Result{}, err
	}
	gp, err := podgroup.Decide(ctx, a.opts.PlanOptions, o, observe.Sources(ctx, a.sources), a.now())
	if err != nil {
		return ctrl.Result{}, err
	}
	return a.write.Apply(ctx, req, gp)
}

func (a *annotatedPods) now() time.Time {
	if a.opts.Now != nil {
		return a.opts.Now()
	}
	return time.Now()
}
