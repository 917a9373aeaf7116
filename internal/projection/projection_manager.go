package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/store"
)

// sourcesIndex is the field index of Projections by the ConfigMaps and
// Secrets they read: "Secret/<name>" and "ConfigMap/<name>".
const sourcesIndex = "reroll.dev/projection-sources"

// Setup adds the Projection controller to mgr. reg receives its metrics
// (controller-runtime's registry in production). The manager's scheme must
// hold reroll.dev/v1alpha1.
func Setup(mgr ctrl.Manager, opts Options, reg prometheus.Registerer) error {
	if len(opts.Key) < 32 {
		return errors.New("projections: the digest key must hold at least 32 bytes")
	}
	d := DefaultOptions()
	if opts.DefaultServiceAccount == "" {
		opts.DefaultServiceAccount = d.DefaultServiceAccount
	}
	if opts.Conflict.Rewrites <= 0 {
		opts.Conflict.Rewrites = d.Conflict.Rewrites
	}
	if opts.Conflict.Window <= 0 {
		opts.Conflict.Window = d.Conflict.Window
	}
	if opts.MaxRetry <= 0 {
		opts.MaxRetry = d.MaxRetry
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	m, err := newMetrics(reg)
	if err != nil {
		return fmt.Errorf("registering the projection metrics: %w", err)
	}
	r := &Reconciler{
		Client:   mgr.GetClient(),
		Config:   mgr.GetConfig(),
		Scheme:   mgr.GetScheme(),
		Mapper:   mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorderFor(FieldManager), //nolint:staticcheck // core/v1 Events, as the workload controller's
		Options:  opts,
		now:      time.Now,
		metrics:  m,
	}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers the field index and the watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rerollv1alpha1.Projection{}, sourcesIndex, sourceKeys); err != nil {
		return fmt.Errorf("indexing Projections by source: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("projection").
		// The spec (generation) and deletion decide what to write; status
		// and finalizer writes, Reroll's own, do not.
		For(&rerollv1alpha1.Projection{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleting())))
	// A source changed: these are the informers the workload controller
	// already has (the store), whose objects hold per-key digests only
	// (digest.Object), so this costs no value in memory and tells which keys
	// changed; only Projections reading one are reconciled.
	var kinds []reference.Kind
	if !r.Options.IgnoreConfigMaps {
		kinds = append(kinds, reference.ConfigMap)
	}
	if !r.Options.IgnoreSecrets {
		kinds = append(kinds, reference.Secret)
	}
	st := r.Options.Store
	if st == nil && len(kinds) > 0 {
		key, err := digest.NewKey(r.Options.Key)
		if err != nil {
			return fmt.Errorf("projections: %w", err)
		}
		if st, err = store.New(mgr.GetConfig(), store.Options{Kinds: kinds, Key: key}); err != nil {
			return err
		}
		if err := mgr.Add(st); err != nil {
			return fmt.Errorf("adding the ConfigMap and Secret store: %w", err)
		}
	}
	for _, kind := range kinds {
		if !st.Watches(kind) {
			continue
		}
		src, err := st.Source(kind, r.sourceHandler(string(kind)))
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	// Source changes are the tenants' to make as often as they like: a
	// namespace over its budget waits behind the others.
	b = b.WithOptions(controller.Options{
		MaxConcurrentReconciles: min(max(r.Options.Workers, 1), MaxWorkers),
		NewQueue:                fairness.NewQueue(r.Options.Fairness, mgr.GetLogger()),
	})
	return b.Complete(r)
}

// deleting passes updates that set the deletion timestamp.
func deleting() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// sourceKeys returns the sourcesIndex values of a Projection.
func sourceKeys(obj client.Object) []string {
	p, ok := obj.(*rerollv1alpha1.Projection)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range p.Spec.Sources {
		if s.SecretKeyRef != nil {
			out = append(out, "Secret/"+s.SecretKeyRef.Name)
		}
		if s.ConfigMapKeyRef != nil {
			out = append(out, "ConfigMap/"+s.ConfigMapKeyRef.Name)
		}
	}
	return out
}

// reads reports whether p reads a key of the named object for which
// changed is true; changed nil means every key.
func reads(p *rerollv1alpha1.Projection, kind, name string, changed func(key string) bool) bool {
	for _, s := range p.Spec.Sources {
		ref := s.ConfigMapKeyRef
		if kind == "Secret" {
			ref = s.SecretKeyRef
		}
		if ref != nil && ref.Name == name && (changed == nil || changed(ref.Key)) {
			return true
		}
	}
	return false
}

// sourceHandler maps events of ConfigMaps or Secrets (kind) to the
// Projections that read a key that changed: on update, only keys whose
// digest differs; on create and delete, every key. Creates from the
// initial list are not mapped: every Projection is reconciled once at
// start anyway.
func (r *Reconciler) sourceHandler(kind string) handler.EventHandler {
	enqueue := func(ctx context.Context, obj client.Object, changed func(string) bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		var list rerollv1alpha1.ProjectionList
		if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{sourcesIndex: kind + "/" + obj.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Could not list the Projections of a source", "kind", kind, "name", client.ObjectKeyFromObject(obj))
			return
		}
		for i := range list.Items {
			if reads(&list.Items[i], kind, obj.GetName(), changed) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				enqueue(ctx, e.Object, nil, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, ok1 := digest.Of(e.ObjectOld)
			after, ok2 := digest.Of(e.ObjectNew)
			if !ok1 || !ok2 {
				return
			}
			enqueue(ctx, e.ObjectNew, func(key string) bool { return before.Keys[key] != after.Keys[key] }, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, nil, q)
		},
	}
}
