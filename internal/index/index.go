package index

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// References is the field index on every workload kind: one value
// "<Kind>/<name>" (e.g. "ConfigMap/app-config") per ConfigMap and Secret
// that may decide the workload's rollouts, plus "<Kind>/*" when a Reloader
// list holds a pattern that may match any name (AnyName), "<Kind>/<ns>/<name>"
// for an allowed reference to another namespace, and Written of a value
// for the objects whose every write counts.
const References = "reroll.dev/references"

// AnyName is the index value's name part for workloads with list patterns.
const AnyName = "*"

// writtenPrefix marks index values of workloads for which any write to the
// object counts (the pod-reloader dialect), not only data changes.
const writtenPrefix = "written:"

// Consumer is the References value of workloads that may consume object
// name of kind in their own namespace (AnyName: any object of kind).
func Consumer(kind reference.Kind, name string) string {
	return reference.Reference{Kind: kind, Name: name}.ID()
}

// Written is the References value of workloads that count every write to
// object name of kind in their namespace (the pod-reloader dialect), not
// only data changes.
func Written(kind reference.Kind, name string) string {
	return writtenPrefix + Consumer(kind, name)
}

// ReferencesOf is the References function for workloads of kind, whose
// annotations cfg parses; allowCrossNamespace is
// --allow-cross-namespace-references. It indexes every reference of an
// opted-in workload's pod template and every name its lists hold;
// Reconcile applies the finer rules (exclude lists, ignore, match).
// Workloads that did not opt in are not indexed, so their dependencies
// cost nothing.
func ReferencesOf(kind workload.Kind, cfg annotation.Config, allowCrossNamespace bool, obj client.Object) []string {
	template, err := kind.PodTemplate(obj)
	if err != nil {
		return nil
	}
	if _, ok := kind.(workload.PodOwner); ok {
		// A pod owner may opt in through its pods' annotations, which only
		// Reconcile reads: any ConfigMap or Secret of the namespace may
		// matter.
		return []string{Consumer(reference.ConfigMap, AnyName), Consumer(reference.Secret, AnyName)}
	}
	optIn, _ := cfg.Parse(obj.GetAnnotations(), template.Annotations)
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
	if !cfg.Ignores(reference.SecretProviderClass) {
		for _, ref := range reference.SecretProviderClasses(template) {
			out = append(out, ref.ID())
		}
	}
	if tr, ok := kind.(workload.TemplateReader); ok && templateElsewhere(tr, obj) {
		// The template's references are in another object: any ConfigMap or
		// Secret of the namespace may matter, and Reconcile reads which.
		for _, k := range []reference.Kind{reference.ConfigMap, reference.Secret} {
			out = append(out, Consumer(k, AnyName))
		}
	}
	out = append(out, extras(optIn, obj.GetNamespace(), allowCrossNamespace)...)
	for _, name := range optIn.PodReloaderConfigMaps {
		out = append(out, Consumer(reference.ConfigMap, name), Written(reference.ConfigMap, name))
	}
	for _, name := range optIn.PodReloaderSecrets {
		out = append(out, Consumer(reference.Secret, name), Written(reference.Secret, name))
	}
	for _, k := range []reference.Kind{reference.ConfigMap, reference.Secret, reference.SecretProviderClass} {
		include, _ := optIn.Lists(k)
		for _, name := range include.Names() {
			out = append(out, Consumer(k, name))
		}
		if include.HasPatterns() {
			out = append(out, Consumer(k, AnyName))
		}
	}
	return out
}

// extras are the values of Wave's extra lists of optIn, a workload's in
// namespace: those in another namespace only when allowed.
func extras(optIn annotation.OptIn, namespace string, allowCrossNamespace bool) []string {
	var out []string
	for _, extra := range []struct {
		kind  reference.Kind
		names []types.NamespacedName
	}{{reference.ConfigMap, optIn.WaveExtraConfigMaps}, {reference.Secret, optIn.WaveExtraSecrets}} {
		for _, nn := range extra.names {
			ref := reference.Reference{Kind: extra.kind, Namespace: nn.Namespace, Name: nn.Name}
			if nn.Namespace == namespace {
				ref.Namespace = ""
			}
			if ref.Namespace != "" && !allowCrossNamespace {
				// Refused by the plan (plan.ReasonCrossNamespaceReference):
				// another namespace's changes must not reconcile the
				// workload, which would tell its author when they happen.
				continue
			}
			out = append(out, ref.ID())
		}
	}
	return out
}

// TemplateFrom is the field index on kinds whose objects may run another
// object's pod template (workload.TemplateReader: Argo Rollouts with
// spec.workloadRef): the name of that Deployment.
const TemplateFrom = "reroll.dev/template-from"

func templateElsewhere(tr workload.TemplateReader, obj client.Object) bool {
	_, ok := tr.TemplateFrom(obj)
	return ok
}

// TemplateFromOf is the TemplateFrom function for workloads of kind: the
// Deployment whose template obj runs; none for other kinds.
func TemplateFromOf(kind workload.Kind, obj client.Object) []string {
	tr, ok := kind.(workload.TemplateReader)
	if !ok {
		return nil
	}
	if name, ok := tr.TemplateFrom(obj); ok {
		return []string{name}
	}
	return nil
}

// Evicting is the field index, on every workload kind, of the workloads
// with a restart by eviction under way ("true"): the pod watch looks them
// up to find which workload a pod event concerns, a cache lookup that finds
// nothing for all the other workloads.
const Evicting = "reroll.dev/evicting"

// EvictingOf is the Evicting function.
func EvictingOf(obj client.Object) []string {
	if _, ok := obj.GetAnnotations()[eviction.ProgressAnnotation]; ok {
		return []string{"true"}
	}
	return nil
}
