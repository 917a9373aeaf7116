package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/store"
)

// ProviderClassIndex is the field index on SecretProviderClassPodStatus
// objects that Cache lists them by: the name of the SecretProviderClass each
// one is for. The controller registers it.
const ProviderClassIndex = "reroll.dev/secretproviderclass"

// Cache is the planner's view of ConfigMaps and Secrets (plan.Source,
// plan.Deletions): the ConfigMap and Secret store, which holds digests,
// never values, and the manager's cache for SecretProviderClassPodStatuses.
// Every read is a cache lookup, no API request.
type Cache struct {
	// Ctx is the context of the reconcile that reads.
	Ctx context.Context
	// Reader is the manager's cache (SecretProviderClassPodStatuses, by
	// ProviderClassIndex).
	Reader client.Reader
	// Store is the ConfigMap and Secret store.
	Store *store.Store
}

// Object implements plan.Source. An object outside the watches (an ignored
// kind or namespace) counts as absent, as it does in the cache.
func (s Cache) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	if kind == reference.SecretProviderClass {
		return s.providerClass(namespace, name)
	}
	obj, ok, err := s.Store.Get(s.Ctx, kind, namespace, name)
	if errors.Is(err, store.ErrNotWatched) {
		return plan.Object{}, false, nil
	}
	if err != nil {
		return plan.Object{}, false, fmt.Errorf("reading cached %s %s/%s: %w", kind, namespace, name, err)
	}
	if !ok {
		return plan.Object{}, false, nil
	}
	return plan.Object{Annotations: obj.GetAnnotations(), Data: obj.Data(), UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion(), History: history(obj)}, true, nil
}

// Names implements plan.Source.
func (s Cache) Names(kind reference.Kind, namespace string) ([]string, error) {
	if kind == reference.SecretProviderClass {
		return s.providerClassNames(namespace)
	}
	names, err := s.Store.Names(s.Ctx, kind, namespace)
	if errors.Is(err, store.ErrNotWatched) {
		return nil, nil
	}
	return names, err
}

// providerClass reads what the cache holds of a SecretProviderClass: the
// versions in its SecretProviderClassPodStatus written last in namespace.
// With no status (no pod mounts it yet) the class counts as absent.
func (s Cache) providerClass(namespace, name string) (plan.Object, bool, error) {
	var list csiv1.SecretProviderClassPodStatusList
	if err := s.Reader.List(s.Ctx, &list, client.InNamespace(namespace), client.MatchingFields{ProviderClassIndex: name}); err != nil {
		return plan.Object{}, false, fmt.Errorf("listing cached SecretProviderClassPodStatuses of %s/%s: %w", namespace, name, err)
	}
	latest := digest.Latest(list.Items)
	if latest == nil {
		return plan.Object{}, false, nil
	}
	return plan.Object{Data: digest.OfSecretProviderClassPodStatus(latest), UID: string(latest.UID), ResourceVersion: latest.ResourceVersion}, true, nil
}

// providerClassNames returns the names of the SecretProviderClasses that
// some cached status in namespace is for, sorted and unique.
func (s Cache) providerClassNames(namespace string) ([]string, error) {
	var list csiv1.SecretProviderClassPodStatusList
	if err := s.Reader.List(s.Ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing cached SecretProviderClassPodStatuses in %s: %w", namespace, err)
	}
	var names []string
	for _, st := range list.Items {
		names = append(names, st.Status.SecretProviderClassName)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// history is the first-sight history of a stored object; its
// resourceVersion bounds the revision of both its creation and its latest
// data change.
func history(obj *digest.Object) plan.History {
	created, changed := obj.History()
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	h := plan.History{Created: plan.Happened{At: created, ResourceVersion: rv}}
	if !changed.IsZero() {
		h.Changed = plan.Happened{At: changed, ResourceVersion: rv}
	}
	return h
}

// Deleted implements plan.Deletions with the deletions the store saw.
func (s Cache) Deleted(kind reference.Kind, namespace, name string) (plan.Happened, bool) {
	if s.Store == nil || (kind != reference.ConfigMap && kind != reference.Secret) {
		return plan.Happened{}, false
	}
	d, ok := s.Store.Deleted(kind, namespace, name)
	if !ok {
		return plan.Happened{}, false
	}
	return plan.Happened{At: d.At, ResourceVersion: d.ResourceVersion}, true
}
