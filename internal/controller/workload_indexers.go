package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/reference"
)

// referenceIndex is the field index on every workload kind: one value
// "<Kind>/<name>" (e.g. "ConfigMap/app-config") per ConfigMap and Secret
// that decides the workload's rollouts. controller-runtime scopes field
// indexes by namespace, so a lookup in the object's namespace is exact.
const referenceIndex = "reroll.dev/references"

// indexReferences is the referenceIndex function for r's kind. Workloads that
// did not opt in are not indexed, so their dependencies cost nothing.
func (r *WorkloadReconciler) indexReferences(obj client.Object) []string {
	template := r.Kind.PodTemplate(obj)
	optIn, _ := annotation.Parse(obj.GetAnnotations(), template.Annotations)
	if !optIn.Enabled() {
		return nil
	}
	refs := consumed(optIn, template)
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.ID())
	}
	return out
}

// requestsFor returns a map function from a ConfigMap or Secret to the
// workloads of r's kind that consume it, found through referenceIndex in
// the cache: no API request.
func (r *WorkloadReconciler) requestsFor(kind reference.Kind) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := r.Kind.NewList()
		key := reference.Reference{Kind: kind, Name: obj.GetName()}.ID()
		if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{referenceIndex: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing dependent workloads from the cache failed", "kind", r.Kind.Name(), "object", key, "namespace", obj.GetNamespace())
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			o := item.(client.Object)
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
			return nil
		})
		return out
	}
}
