package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/store"
)

// cacheSource is the planner's view of ConfigMaps and Secrets: the
// ConfigMap and Secret store, which holds digests, never values, and the
// manager's cache for SecretProviderClassPodStatuses. Every read is a cache
// lookup, no API request.
type cacheSource struct {
	ctx   context.Context
	c     client.Reader
	store *store.Store
}

// Object implements plan.Source. An object outside the watches (an ignored
// kind or namespace) counts as absent, as it does in the cache.
func (s cacheSource) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	if kind == reference.SecretProviderClass {
		return s.providerClass(namespace, name)
	}
	obj, ok, err := s.store.Get(s.ctx, kind, namespace, name)
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
func (s cacheSource) Names(kind reference.Kind, namespace string) ([]string, error) {
	if kind == reference.SecretProviderClass {
		return s.providerClassNames(namespace)
	}
	names, err := s.store.Names(s.ctx, kind, namespace)
	if errors.Is(err, store.ErrNotWatched) {
		return nil, nil
	}
	return names, err
}

// waveHash computes Wave's hash of the consumed values of refs, the value of
// plan.DeferredWaveHash. Wave hashes values, which the cache does not hold,
// so this reads each object from the API server: only when a Wave-dialect
// workload rolls.
func (r *WorkloadReconciler) waveHash(ctx context.Context, namespace string, refs []reference.Reference) (string, error) {
	configMaps := map[string]map[string][]byte{}
	secrets := map[string]map[string][]byte{}
	for _, ref := range refs {
		key := types.NamespacedName{Namespace: plan.RefNamespace(ref, namespace), Name: ref.Name}
		if !r.Options.Scope.Watches(key.Namespace) {
			// The same scope as the watches: outside it, an object counts
			// as absent, as it does in the cache.
			continue
		}
		values := map[string][]byte{}
		if ref.Kind == reference.Secret {
			var s corev1.Secret
			if err := r.APIReader.Get(ctx, key, &s); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", fmt.Errorf("reading Secret %s for Wave's hash: %w", key, err)
			}
			if !r.Options.Scope.Selects(&s) {
				continue
			}
			for k, v := range s.Data {
				if ref.Consumes(k) {
					values[k] = v
				}
			}
			secrets[ref.Name] = mergeValues(secrets[ref.Name], values)
			continue
		}
		var cm corev1.ConfigMap
		if err := r.APIReader.Get(ctx, key, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("reading ConfigMap %s for Wave's hash: %w", key, err)
		}
		if !r.Options.Scope.Selects(&cm) {
			continue
		}
		for k, v := range cm.Data {
			if ref.Consumes(k) {
				values[k] = []byte(v)
			}
		}
		for k, v := range cm.BinaryData {
			if ref.Consumes(k) {
				values[k] = v
			}
		}
		configMaps[ref.Name] = mergeValues(configMaps[ref.Name], values)
	}
	return digest.WaveHash(configMaps, secrets), nil
}

// mergeValues adds b's entries to a (Wave keys objects by name only, so two
// namespaces' objects of one name share an entry).
func mergeValues(a, b map[string][]byte) map[string][]byte {
	if a == nil {
		return b
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}
