package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// cacheSource is the planner's view of ConfigMaps and Secrets: the
// manager's cache, which holds digests, never values. Every read is a cache
// lookup, no API request.
type cacheSource struct {
	ctx context.Context
	c   client.Reader
}

// Object implements plan.Source.
func (s cacheSource) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	if kind == reference.SecretProviderClass {
		return s.providerClass(namespace, name)
	}
	obj := newObject(kind)
	if err := s.c.Get(s.ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return plan.Object{}, false, nil
		}
		return plan.Object{}, false, fmt.Errorf("reading cached %s %s/%s: %w", kind, namespace, name, err)
	}
	d, _ := digest.Of(obj)
	return plan.Object{Annotations: obj.GetAnnotations(), Data: d, UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}, true, nil
}

// Names implements plan.Source.
func (s cacheSource) Names(kind reference.Kind, namespace string) ([]string, error) {
	var names []string
	if kind == reference.SecretProviderClass {
		return s.providerClassNames(namespace)
	}
	if kind == reference.Secret {
		var list corev1.SecretList
		if err := s.c.List(s.ctx, &list, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing cached Secrets in %s: %w", namespace, err)
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
		return names, nil
	}
	var list corev1.ConfigMapList
	if err := s.c.List(s.ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing cached ConfigMaps in %s: %w", namespace, err)
	}
	for _, o := range list.Items {
		names = append(names, o.Name)
	}
	return names, nil
}

func newObject(kind reference.Kind) client.Object {
	if kind == reference.Secret {
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
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
		if !r.Options.Scope.watches(key.Namespace) {
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
			if !r.Options.Scope.selects(&s) {
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
		if !r.Options.Scope.selects(&cm) {
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
