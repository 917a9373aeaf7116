package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// CacheOptions returns the cache settings Reroll needs: the digest transform
// on every object, so ConfigMap and Secret values never stay in memory.
// Callers may set further fields (namespaces, selectors) on the result.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: digest.Transform}
}

// Setup registers one reconciler per built-in workload kind with mgr,
// with its field index and watches. It returns an error when an index or a
// controller cannot be registered.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	// The controllers create their ConfigMap and Secret informers only when
	// they start, after the cache has synced the informers it already had;
	// creating them here makes every wait for the cache (and so /readyz)
	// include them.
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("creating the %T informer: %w", obj, err)
		}
	}
	for _, kind := range workload.Builtin() {
		r := &WorkloadReconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorderFor(FieldManager), //nolint:staticcheck // see WorkloadReconciler.Recorder
			Kind:      kind,
			Options:   opts,
		}
		if err := r.SetupWithManager(ctx, mgr); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithManager registers r's field index and controller with mgr.
func (r *WorkloadReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), referenceIndex, r.indexReferences); err != nil {
		return fmt.Errorf("indexing %s by references: %w", r.Kind.Name(), err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(r.Kind.Name())).
		// The workload itself: a new workload is recorded on first sight; a
		// change to its pod template or to its opt-in annotations changes what
		// it consumes. Status-only updates (every rollout makes many) are
		// filtered out.
		For(r.Kind.New(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// ConfigMaps and Secrets: a data change maps through the reference
		// index to the workloads that consume the object. Metadata-only
		// updates are dropped here, before any work. Changes that come
		// close together are coalesced into one rollout (workload_coalesce.go).
		Watches(&corev1.ConfigMap{}, enqueueCoalesced(r.Options.CoalesceWindow, r.requestsFor(reference.ConfigMap)), builder.WithPredicates(dataChanged())).
		Watches(&corev1.Secret{}, enqueueCoalesced(r.Options.CoalesceWindow, r.requestsFor(reference.Secret)), builder.WithPredicates(dataChanged())).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", r.Kind.Name(), err)
	}
	return nil
}

// dataChanged passes creates, deletes and updates whose data digests differ;
// an update of labels, annotations or other metadata alone is dropped.
func dataChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := digest.Of(e.ObjectOld)
			after, ok2 := digest.Of(e.ObjectNew)
			return !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys)
		},
	}
}
