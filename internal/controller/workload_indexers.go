package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/index"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// anyWriteMatters reports whether a workload of r's kind in the object's
// namespace counts every write to the object (pod-reloader dialect); a cache
// lookup, no API request.
func (r *WorkloadReconciler) anyWriteMatters(ctx context.Context, kind reference.Kind, obj client.Object) bool {
	found, err := r.cached().ByField(ctx, r.Kind.New(), r.Kind.NewList(), index.References, obj.GetNamespace(), index.Written(kind, obj.GetName()), 1)
	if err != nil {
		return true
	}
	return len(found) > 0
}

// cached finds the workloads of r's kind by field index or namespace: in
// the indexes of the cache r.Client reads from, else by a List through it.
func (r *WorkloadReconciler) cached() index.Cache {
	return index.Cache{Informers: r.informers, Reader: r.Client}
}

// indexReferences is the index.References function for r's kind
// (index.ReferencesOf). A cached Deployment, StatefulSet or DaemonSet
// keeps its values (compact.Indexed): the indexer, which computes the
// values of the copy an update replaces again, decodes that copy's pod
// template once, not on each of its updates and deletion.
func (r *WorkloadReconciler) indexReferences(obj client.Object) []string {
	return compact.Indexed(obj, r.referencesOf)
}

// referencesOf is index.ReferencesOf for r's kind and options.
func (r *WorkloadReconciler) referencesOf(obj client.Object) []string {
	return index.ReferencesOf(r.Kind, r.Options.Annotations, r.Options.AllowCrossNamespaceReferences, obj)
}

// requestsForTemplate maps a Deployment to the workloads of r's kind that
// run its pod template, found through index.TemplateFrom in the cache.
func (r *WorkloadReconciler) requestsForTemplate(ctx context.Context, d client.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(d.GetNamespace()), client.MatchingFields{index.TemplateFrom: d.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads that run a Deployment's template failed", "kind", r.Kind.Name(), "namespace", d.GetNamespace(), "deployment", d.GetName())
		return nil
	}
	return requestsOf(list)
}

// requestsFor returns a map function from a ConfigMap or Secret to the
// workloads of r's kind that may consume it, found through index.References in
// the cache: no API request.
func (r *WorkloadReconciler) requestsFor(kind reference.Kind) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		seen := map[types.NamespacedName]bool{}
		var out []reconcile.Request
		lookups := []struct {
			key       string
			namespace string
		}{
			{index.Consumer(kind, obj.GetName()), obj.GetNamespace()},
			{index.Consumer(kind, index.AnyName), obj.GetNamespace()},
			// Workloads in any namespace that name this object with its
			// namespace (Wave's extra lists).
			{reference.Reference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}.ID(), ""},
		}
		for _, l := range lookups {
			// Only names are read, from the cache's index itself
			// (indexed): a wide fan-out neither copies nor decodes a
			// workload.
			found, err := r.cached().ByField(ctx, r.Kind.New(), r.Kind.NewList(), index.References, l.namespace, l.key, 0)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Listing dependent workloads from the cache failed", "kind", r.Kind.Name(), "object", l.key, "namespace", obj.GetNamespace())
				continue
			}
			for _, o := range found {
				nn := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
				if !seen[nn] {
					seen[nn] = true
					out = append(out, reconcile.Request{NamespacedName: nn})
				}
			}
		}
		return out
	}
}

// requestsInNamespace maps a Namespace to every workload of r's kind in it,
// for --namespace-selector: a namespace whose labels change may enter or
// leave the scope.
func (r *WorkloadReconciler) requestsInNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.requestsInNamespaceWhere(ctx, ns, nil)
}

// requestsInNamespaceWhere maps a Namespace to the workloads of r's kind
// in it, from the cache, that keep passes (all when keep is nil); none when
// the Namespace is outside the scope. keep is given the workloads as the
// cache holds them (inNamespace), and must only read their metadata.
func (r *WorkloadReconciler) requestsInNamespaceWhere(ctx context.Context, ns client.Object, keep func(client.Object) bool) []reconcile.Request {
	// Namespaces are watched cluster-wide; most are outside the scope.
	if !r.Options.Scope.Watches(ns.GetName()) {
		return nil
	}
	objs, err := r.cached().InNamespace(ctx, r.Kind.New(), r.Kind.NewList(), ns.GetName())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads from the cache failed", "kind", r.Kind.Name(), "namespace", ns.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, o := range objs {
		if keep == nil || keep(o) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
		}
	}
	return out
}

// requestsPendingInNamespace maps a Namespace whose annotations changed to
// the workloads of r's kind in it whose rollout is deferred
// (plan.PendingAnnotation): its rollout window or bound may have changed.
func (r *WorkloadReconciler) requestsPendingInNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.requestsInNamespaceWhere(ctx, ns, func(o client.Object) bool {
		return plan.PendingReason(r.Options.Key, string(o.GetUID()), o.GetAnnotations()) != ""
	})
}

// requestsOf returns one request per object of list, in list order.
func requestsOf(list client.ObjectList) []reconcile.Request {
	out := make([]reconcile.Request, 0, meta.LenList(list))
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		o := item.(client.Object)
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
		return nil
	})
	return out
}
