package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// Setup registers one reconciler per built-in workload kind not in
// opts.IgnoredWorkloads with mgr, with its field index and watches. The
// manager's cache must come from opts.Scope.CacheOptions. A zero Strategy
// means annotations and zero annotation names mean Reloader's. It returns an
// error when an index or a controller cannot be registered.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Strategy == "" {
		opts.Strategy = trigger.Annotations
	}
	if opts.Annotations.Names == (annotation.Names{}) {
		opts.Annotations.Names = annotation.DefaultNames()
	}
	var notifier *notify.Client
	if opts.WebhookURL != "" {
		notifier = &notify.Client{URL: opts.WebhookURL}
	}
	for _, kind := range workload.Builtin() {
		if slices.Contains(opts.IgnoredWorkloads, strings.ToLower(kind.Name())+"s") {
			ctrl.LoggerFrom(ctx).Info("Not handling ignored workload kind", "kind", kind.Name())
			continue
		}
		r := &WorkloadReconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorderFor(FieldManager), //nolint:staticcheck // see WorkloadReconciler.Recorder
			Kind:      kind,
			Options:   opts,
			notifier:  notifier,
			metrics:   metrics.NewWorkloads(kind.Name(), nil),
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
	relevant := r.relevantChange()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(r.Kind.Name())).
		// The workload itself: a new workload is recorded on first sight; a
		// change to its pod template or to its annotations changes what it
		// consumes. Status-only updates (every rollout makes many) are
		// filtered out.
		For(r.Kind.New(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	// ConfigMaps and Secrets: a data change maps through the reference
	// index to the workloads that may consume the object. Updates of
	// other metadata are dropped here, before any work. A kind in
	// --resources-to-ignore is not watched at all, so Reroll needs no
	// access to it.
	if !r.Options.Annotations.IgnoreConfigMaps {
		b = b.Watches(&corev1.ConfigMap{}, r.trackChanges(handler.EnqueueRequestsFromMapFunc(r.requestsFor(reference.ConfigMap))), builder.WithPredicates(relevant))
	}
	if !r.Options.Annotations.IgnoreSecrets {
		b = b.Watches(&corev1.Secret{}, r.trackChanges(handler.EnqueueRequestsFromMapFunc(r.requestsFor(reference.Secret))), builder.WithPredicates(relevant))
	}
	if sel := r.Options.Scope.NamespaceSelector; sel != nil && !sel.Empty() {
		// Namespaces, metadata only, for --namespace-selector: a namespace
		// whose labels change may enter the scope.
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.requestsInNamespace),
			builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("creating the %s controller: %w", r.Kind.Name(), err)
	}
	return nil
}

// relevantChange passes creates, deletes, and updates that change the data
// digests or the annotations that decide selection (ignore, match); an update
// of labels or other annotations alone is dropped.
func (r *WorkloadReconciler) relevantChange() predicate.Predicate {
	keys := r.Options.Annotations.SelectionKeys()
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := digest.Of(e.ObjectOld)
			after, ok2 := digest.Of(e.ObjectNew)
			if !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys) {
				return true
			}
			return !sameValues(e.ObjectOld, e.ObjectNew, keys)
		},
	}
}

func sameValues(a, b metav1.Object, keys []string) bool {
	for _, k := range keys {
		if a.GetAnnotations()[k] != b.GetAnnotations()[k] {
			return false
		}
	}
	return true
}
