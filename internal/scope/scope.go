package scope

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/eviction"
)

// Scope limits what Reroll watches. Where the API server can filter (a
// namespace list, excluded namespaces, a label selector on ConfigMaps and
// Secrets), the filter is part of the watch, so objects outside the scope
// are never sent to Reroll nor cached. A namespace selector cannot be applied
// by the API server to other kinds, so it is checked in Reconcile against the
// namespace's labels.
type Scope struct {
	// Namespaces, when set, are the only namespaces watched (--namespaces, or
	// KUBERNETES_NAMESPACE).
	Namespaces []string
	// IgnoredNamespaces are never watched (--namespaces-to-ignore).
	IgnoredNamespaces []string
	// NamespaceSelector, when set, selects the namespaces whose workloads are
	// rolled, by label (--namespace-selector).
	NamespaceSelector labels.Selector
	// ResourceSelector, when set, selects the ConfigMaps and Secrets watched,
	// by label (--resource-label-selector). An object that does not match is
	// treated as absent.
	ResourceSelector labels.Selector
}

// CacheOptions returns the manager's cache settings for the scope: the
// digest transform on every object (it drops managedFields and the
// last-applied-configuration annotation; a workload keeps one managedFields
// entry, the time of its last write, for the first-sight rule:
// Transform), the namespaces, and the
// server-side selectors. ConfigMaps and Secrets are not in this cache but in
// the store (StoreOptions); the same transform turns any that reach it into
// digest.Objects, so a cached read of one fails with a type error instead of
// holding values.
func (s Scope) CacheOptions() cache.Options {
	o := cache.Options{DefaultTransform: Transform(digest.Key{}, nil)}
	if len(s.Namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	// Pods keep only what a restart by eviction reads, and long env values
	// as a digest: Reroll never writes a pod.
	o.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: func(obj any) (any, error) {
		out, err := eviction.TransformPod(obj)
		if p, ok := out.(*corev1.Pod); ok {
			envtrim.Values(&p.Spec)
		}
		return out, err
	}}}
	if len(s.IgnoredNamespaces) > 0 {
		sels := make([]fields.Selector, 0, len(s.IgnoredNamespaces))
		for _, ns := range s.IgnoredNamespaces {
			sels = append(sels, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		o.DefaultFieldSelector = fields.AndSelectors(sels...)
		// Namespaces have no metadata.namespace to select on: the API
		// server refuses that selector and their informer (namespace
		// selector, rollout windows and bounds) would never sync.
		o.ByObject[&corev1.Namespace{}] = cache.ByObject{Field: fields.Everything()}
	}
	return o
}

// ManagerOptions returns the manager settings Reroll needs: the scope's
// cache (CacheOptions), and a client that reads unstructured objects (custom
// workload kinds) from that cache too, not from the API server. The client
// reads ConfigMaps and Secrets from the API server: a cached read would start
// an informer of typed objects beside the store, with the memory the store
// saves. Callers add metrics, probes and leader election.
func (s Scope) ManagerOptions() ctrl.Options {
	return ctrl.Options{
		Cache: s.CacheOptions(),
		Client: client.Options{Cache: &client.CacheOptions{
			Unstructured: true,
			DisableFor:   []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}},
		}},
	}
}

// Watches reports whether ConfigMaps and Secrets of namespace are watched
// (--namespaces, --namespaces-to-ignore). Reads that bypass the cache
// (Wave's hash) check it, so that they see no more than the watches.
func (s Scope) Watches(namespace string) bool {
	if len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, namespace) {
		return false
	}
	return !slices.Contains(s.IgnoredNamespaces, namespace)
}

// ResourceLabelKeys returns the label keys --resource-label-selector
// names (ResourceSelector's requirements), or nil without one. An object
// that carries a selected object's values of these keys (or their
// absence) is selected too: versioned config's copies carry them
// (internal/apply Copier.CarryLabels) so that they enter Reroll's store.
func (s Scope) ResourceLabelKeys() []string {
	if s.ResourceSelector == nil {
		return nil
	}
	reqs, _ := s.ResourceSelector.Requirements()
	var keys []string
	for _, r := range reqs {
		if !slices.Contains(keys, r.Key()) {
			keys = append(keys, r.Key())
		}
	}
	return keys
}

// Selects reports whether a ConfigMap or Secret read from the API server
// matches --resource-label-selector, as the watches require.
func (s Scope) Selects(obj client.Object) bool {
	return s.ResourceSelector == nil || s.ResourceSelector.Empty() || s.ResourceSelector.Matches(labels.Set(obj.GetLabels()))
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Includes reports whether workloads in namespace are in scope. Only a
// namespace selector costs a read: of the namespace's metadata, from the
// cache, with no copy (its labels are matched, never changed; see
// NamespaceAnnotations).
func (s Scope) Includes(ctx context.Context, c client.Reader, namespace string) (bool, error) {
	if len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, namespace) {
		return false, nil
	}
	if slices.Contains(s.IgnoredNamespaces, namespace) {
		return false, nil
	}
	if s.NamespaceSelector == nil || s.NamespaceSelector.Empty() {
		return true, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading namespace %s for --namespace-selector: %w", namespace, err)
	}
	return s.NamespaceSelector.Matches(labels.Set(ns.GetLabels())), nil
}

// CanWatchNamespaces reports whether Reroll may list and watch Namespaces
// cluster-wide, which reading their annotations from the cache needs.
func CanWatchNamespaces(ctx context.Context, c client.Client) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "namespaces"},
		}}
		if err := c.Create(ctx, review); err != nil {
			return false, fmt.Errorf("checking permission to %s namespaces: %w", verb, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// NamespaceAnnotations returns the annotations of namespace, read through c
// (the manager's cache: metadata only), for the Namespace's rollout window
// and bound; nil when the Namespace is gone. Every reconcile reads them, so
// the cache hands over its own map, with no copy of the Namespace's
// metadata (client.UnsafeDisableDeepCopy): callers read it and never write
// into it. The cache replaces a Namespace on a change and never writes into
// the one it held, so a map read stays as it was.
func NamespaceAnnotations(ctx context.Context, c client.Reader, namespace string) (map[string]string, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading namespace %s for its rollout window and bound: %w", namespace, err)
	}
	return ns.GetAnnotations(), nil
}
