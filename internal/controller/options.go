package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/store"
)

// StoreOptions returns the settings of the ConfigMap and Secret store
// (internal/store) for o: the scope's namespaces and label selector, the
// kinds not in --resources-to-ignore, values digested under o.Key.
func (o Options) StoreOptions() store.Options {
	so := store.Options{
		Namespaces:        o.Scope.Namespaces,
		IgnoredNamespaces: o.Scope.IgnoredNamespaces,
		LabelSelector:     o.Scope.ResourceSelector,
		Key:               o.Key,
	}
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
		if !o.Annotations.Ignores(kind) {
			so.Kinds = append(so.Kinds, kind)
		}
	}
	return so
}

// ManagerOptions returns the manager settings of Scope.ManagerOptions, with
// the cache digesting values under o.Key and taking the compact form of
// the workloads it holds from o.InitialList (scope.Transform).
func (o Options) ManagerOptions() ctrl.Options {
	mo := o.Scope.ManagerOptions()
	mo.Cache.DefaultTransform = scope.Transform(o.Key, o.InitialList)
	return mo
}
