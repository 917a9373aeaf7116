package source

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
	"github.com/reroll/reroll/internal/scope"
)

// WaveHash computes Wave's hash of the consumed values of refs, the value of
// plan.DeferredWaveHash. Wave hashes values, which the cache does not hold,
// so this reads each object from the API server: only when a Wave-dialect
// workload rolls.
//
// api reads from the API server; in is the scope of the watches, which the
// reads follow.
func WaveHash(ctx context.Context, api client.Reader, in scope.Scope, namespace string, refs []reference.Reference) (string, error) {
	configMaps := map[string]map[string][]byte{}
	secrets := map[string]map[string][]byte{}
	for _, ref := range refs {
		key := types.NamespacedName{Namespace: plan.RefNamespace(ref, namespace), Name: ref.Name}
		if !in.Watches(key.Namespace) {
			// The same scope as the watches: outside it, an object counts
			// as absent, as it does in the cache.
			continue
		}
		values := map[string][]byte{}
		if ref.Kind == reference.Secret {
			var s corev1.Secret
			if err := api.Get(ctx, key, &s); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", fmt.Errorf("reading Secret %s for Wave's hash: %w", key, err)
			}
			if !in.Selects(&s) {
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
		if err := api.Get(ctx, key, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("reading ConfigMap %s for Wave's hash: %w", key, err)
		}
		if !in.Selects(&cm) {
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
