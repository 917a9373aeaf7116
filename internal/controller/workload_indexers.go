package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// referenceIndex is the field index on every workload kind: one value
// "<Kind>/<name>" (e.g. "ConfigMap/app-config") per ConfigMap and Secret
// that may decide the workload's rollouts, plus "<Kind>/*" when a Reloader
// list holds a pattern that may match any name. controller-runtime scopes
// field indexes by namespace, so a lookup in the object's namespace is exact.
const referenceIndex = "reroll.dev/references"

// anyName is the index value's name part for workloads with list patterns.
const anyName = "*"

// writtenPrefix marks index values of workloads for which any write to the
// object counts (the pod-reloader dialect), not only data changes.
const writtenPrefix = "written:"

// anyWriteMatters reports whether a workload of r's kind in the object's
// namespace counts every write to the object (pod-reloader dialect); a cache
// lookup, no API request.
func (r *WorkloadReconciler) anyWriteMatters(ctx context.Context, kind reference.Kind, obj client.Object) bool {
	list := r.Kind.NewList()
	key := writtenPrefix + reference.Reference{Kind: kind, Name: obj.GetName()}.ID()
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{referenceIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
		return true
	}
	return meta.LenList(list) > 0
}

// indexReferences is the referenceIndex function for r's kind. It indexes
// every reference of an opted-in workload's pod template and every name its
// lists hold; Reconcile applies the finer rules (exclude lists, ignore,
// match). Workloads that did not opt in are not indexed, so their
// dependencies cost nothing.
func (r *WorkloadReconciler) indexReferences(obj client.Object) []string {
	template, err := r.Kind.PodTemplate(obj)
	if err != nil {
		return nil
	}
	if _, ok := r.Kind.(workload.PodOwner); ok {
		// A pod owner may opt in through its pods' annotations, which only
		// Reconcile reads: any ConfigMap or Secret of the namespace may
		// matter.
		return []string{
			reference.Reference{Kind: reference.ConfigMap, Name: anyName}.ID(),
			reference.Reference{Kind: reference.Secret, Name: anyName}.ID(),
		}
	}
	optIn, _ := r.Options.Annotations.Parse(obj.GetAnnotations(), template.Annotations)
	if !optIn.Enabled() {
		return nil
	}
	var out []string
	for _, ref := range reference.FromPodTemplate(template) {
		out = append(out, ref.ID())
	}
	// Versioned config: a pinned template names copies, which never
	// change; its sources' changes must still find the workload. The
	// annotation is the workload writer's word, and only adds lookups.
	pins, _ := pin.ParsePins(template.Annotations[pin.TemplateAnnotation])
	for src := range pins {
		out = append(out, reference.Reference{Kind: src.Kind, Name: src.Name}.ID())
	}
	if !r.Options.Annotations.Ignores(reference.SecretProviderClass) {
		for _, ref := range reference.SecretProviderClasses(template) {
			out = append(out, ref.ID())
		}
	}
	if tr, ok := r.Kind.(workload.TemplateReader); ok && templateElsewhere(tr, obj) {
		// The template's references are in another object: any ConfigMap or
		// Secret of the namespace may matter, and Reconcile reads which.
		for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
			out = append(out, reference.Reference{Kind: kind, Name: anyName}.ID())
		}
	}
	for _, extra := range []struct {
		kind  reference.Kind
		names []types.NamespacedName
	}{{reference.ConfigMap, optIn.WaveExtraConfigMaps}, {reference.Secret, optIn.WaveExtraSecrets}} {
		for _, nn := range extra.names {
			ref := reference.Reference{Kind: extra.kind, Namespace: nn.Namespace, Name: nn.Name}
			if nn.Namespace == obj.GetNamespace() {
				ref.Namespace = ""
			}
			if ref.Namespace != "" && !r.Options.AllowCrossNamespaceReferences {
				// Refused by the plan (plan.ReasonCrossNamespaceReference):
				// another namespace's changes must not reconcile the
				// workload, which would tell its author when they happen.
				continue
			}
			out = append(out, ref.ID())
		}
	}
	for _, name := range optIn.PodReloaderConfigMaps {
		id := reference.Reference{Kind: reference.ConfigMap, Name: name}.ID()
		out = append(out, id, writtenPrefix+id)
	}
	for _, name := range optIn.PodReloaderSecrets {
		id := reference.Reference{Kind: reference.Secret, Name: name}.ID()
		out = append(out, id, writtenPrefix+id)
	}
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret, reference.SecretProviderClass} {
		include, _ := optIn.Lists(kind)
		for _, name := range include.Names() {
			out = append(out, reference.Reference{Kind: kind, Name: name}.ID())
		}
		if include.HasPatterns() {
			out = append(out, reference.Reference{Kind: kind, Name: anyName}.ID())
		}
	}
	return out
}

// templateIndex is the field index on kinds whose objects may run another
// object's pod template (workload.TemplateReader: Argo Rollouts with
// spec.workloadRef): the name of that Deployment.
const templateIndex = "reroll.dev/template-from"

func templateElsewhere(tr workload.TemplateReader, obj client.Object) bool {
	_, ok := tr.TemplateFrom(obj)
	return ok
}

// indexTemplateFrom is the templateIndex function: the Deployment whose
// template an opted-in object runs.
func (r *WorkloadReconciler) indexTemplateFrom(obj client.Object) []string {
	tr, ok := r.Kind.(workload.TemplateReader)
	if !ok {
		return nil
	}
	if name, ok := tr.TemplateFrom(obj); ok {
		return []string{name}
	}
	return nil
}

// requestsForTemplate maps a Deployment to the workloads of r's kind that
// run its pod template, found through templateIndex in the cache.
func (r *WorkloadReconciler) requestsForTemplate(ctx context.Context, d client.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(d.GetNamespace()), client.MatchingFields{templateIndex: d.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads that run a Deployment's template failed", "kind", r.Kind.Name(), "namespace", d.GetNamespace(), "deployment", d.GetName())
		return nil
	}
	return requestsOf(list)
}

// requestsFor returns a map function from a ConfigMap or Secret to the
// workloads of r's kind that may consume it, found through referenceIndex in
// the cache: no API request.
func (r *WorkloadReconciler) requestsFor(kind reference.Kind) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		seen := map[types.NamespacedName]bool{}
		var out []reconcile.Request
		lookups := []struct {
			key       string
			namespace string
		}{
			{reference.Reference{Kind: kind, Name: obj.GetName()}.ID(), obj.GetNamespace()},
			{reference.Reference{Kind: kind, Name: anyName}.ID(), obj.GetNamespace()},
			// Workloads in any namespace that name this object with its
			// namespace (Wave's extra lists).
			{reference.Reference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}.ID(), ""},
		}
		for _, l := range lookups {
			list := r.Kind.NewList()
			key := l.key
			// Only names are read: the cache's objects are listed without
			// a deep copy, so a wide fan-out costs no allocation per
			// workload.
			if err := r.Client.List(ctx, list, client.InNamespace(l.namespace), client.MatchingFields{referenceIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Listing dependent workloads from the cache failed", "kind", r.Kind.Name(), "object", key, "namespace", obj.GetNamespace())
				continue
			}
			_ = meta.EachListItem(list, func(item runtime.Object) error {
				o := item.(client.Object)
				nn := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
				if !seen[nn] {
					seen[nn] = true
					out = append(out, reconcile.Request{NamespacedName: nn})
				}
				return nil
			})
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
// the Namespace is outside the scope.
func (r *WorkloadReconciler) requestsInNamespaceWhere(ctx context.Context, ns client.Object, keep func(client.Object) bool) []reconcile.Request {
	// Namespaces are watched cluster-wide; most are outside the scope.
	if !r.Options.Scope.Watches(ns.GetName()) {
		return nil
	}
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads from the cache failed", "kind", r.Kind.Name(), "namespace", ns.GetName())
		return nil
	}
	if keep == nil {
		return requestsOf(list)
	}
	var out []reconcile.Request
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		if o := item.(client.Object); keep(o) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
		}
		return nil
	})
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
