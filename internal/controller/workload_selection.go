package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// selection is the set of ConfigMaps and Secrets that decide one workload's
// rollouts, with what the cache holds of each.
type selection struct {
	// refs are sorted by kind, then name.
	refs []reference.Reference
	// data holds each reference's digests by ID; nil when the object does
	// not exist.
	data map[string]*digest.Data
	// podReloader holds, in pod-reloader's order, the objects of its hash;
	// set only in that dialect.
	podReloader []digest.PodReloaderEntry
	// missing names required (non-optional) objects or keys that do not
	// exist; the Wave dialect does not roll while any is missing.
	missing []string
	// waveHash is Wave's hash of the selected data, computed only when a
	// Wave-dialect workload rolls.
	waveHash string
}

// writtenKey is the single pseudo-key of an object in the pod-reloader
// dialect: its digest is that of "<uid>.<resourceVersion>", which any write
// changes.
const writtenKey = "(uid.resourceVersion)"

// observed returns the recorded form of the selection.
func (s selection) observed() observed {
	o := observed{}
	for _, ref := range s.refs {
		if d := s.data[ref.ID()]; d != nil {
			o[ref.ID()] = observe(ref, d.Keys)
		} else {
			o[ref.ID()] = nil
		}
	}
	return o
}

// reloaderSHA1 returns Reloader's hash of the object behind a change: the
// SHA-1 of nothing when it was deleted.
func (s selection) reloaderSHA1(c change) string {
	if d := s.data[c.ref.ID()]; d != nil {
		return d.ReloaderSHA1
	}
	return emptySHA1
}

// cached is what the cache holds of one ConfigMap or Secret.
type cached struct {
	annotations map[string]string
	data        *digest.Data
	// uid and resourceVersion identify the version of the object.
	uid, resourceVersion string
}

// selectReferences applies the workload's opt-in, with Reloader's
// precedence (annotation.Config.Selects), to the pod template's references
// and to the objects its explicit lists name or match. Every read is from the
// cache; lists are read only for Reloader list entries that are patterns.
func (r *WorkloadReconciler) selectReferences(ctx context.Context, namespace string, optIn annotation.OptIn, template *corev1.PodTemplateSpec) (selection, error) {
	switch optIn.Dialect {
	case annotation.DialectPodReloader:
		return r.selectPodReloader(ctx, namespace, optIn)
	case annotation.DialectWave:
		return r.selectWave(ctx, namespace, optIn, template)
	}
	cfg := r.Options.Annotations
	sel := selection{data: map[string]*digest.Data{}}
	considered := map[string]bool{}
	for _, ref := range reference.FromPodTemplate(template) {
		considered[ref.ID()] = true
		if cfg.Ignores(ref.Kind) {
			continue
		}
		obj, err := r.lookup(ctx, namespace, ref.Kind, ref.Name)
		if err != nil {
			return selection{}, err
		}
		if cfg.Selects(optIn, ref.Kind, ref.Name, obj.annotations, true) {
			sel.refs = append(sel.refs, ref)
			sel.data[ref.ID()] = obj.data
		}
	}
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
		include, _ := optIn.Lists(kind)
		if cfg.Ignores(kind) || len(include) == 0 {
			continue
		}
		names := include.Names()
		if include.HasPatterns() {
			matched, err := r.matching(ctx, namespace, kind, include)
			if err != nil {
				return selection{}, err
			}
			names = append(names, matched...)
		}
		for _, name := range names {
			ref := reference.Reference{Kind: kind, Name: name, All: true}
			if considered[ref.ID()] {
				continue
			}
			considered[ref.ID()] = true
			obj, err := r.lookup(ctx, namespace, kind, name)
			if err != nil {
				return selection{}, err
			}
			if cfg.Selects(optIn, kind, name, obj.annotations, false) {
				sel.refs = append(sel.refs, ref)
				sel.data[ref.ID()] = obj.data
			}
		}
	}
	sort.Slice(sel.refs, func(i, j int) bool {
		if sel.refs[i].Kind != sel.refs[j].Kind {
			return sel.refs[i].Kind < sel.refs[j].Kind
		}
		return sel.refs[i].Name < sel.refs[j].Name
	})
	return sel, nil
}

// lookup reads one object from the cache; a missing object yields an empty
// cached value, not an error.
func (r *WorkloadReconciler) lookup(ctx context.Context, namespace string, kind reference.Kind, name string) (cached, error) {
	// An ignored kind is not watched; reading it would start a watch.
	if r.Options.Annotations.Ignores(kind) {
		return cached{}, nil
	}
	obj := newObject(kind)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return cached{}, nil
		}
		return cached{}, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	d, _ := r.Options.Key.Of(obj)
	return cached{annotations: obj.GetAnnotations(), data: &d, uid: string(obj.GetUID()), resourceVersion: obj.GetResourceVersion()}, nil
}

// matching returns the names of the cached objects of kind in namespace that
// a list matches.
func (r *WorkloadReconciler) matching(ctx context.Context, namespace string, kind reference.Kind, l annotation.List) ([]string, error) {
	var names []string
	if kind == reference.Secret {
		var list corev1.SecretList
		if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing cached Secrets in %s: %w", namespace, err)
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	} else {
		var list corev1.ConfigMapList
		if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing cached ConfigMaps in %s: %w", namespace, err)
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	}
	out := names[:0]
	for _, n := range names {
		if l.Matches(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func newObject(kind reference.Kind) client.Object {
	if kind == reference.Secret {
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}

// selectPodReloader selects the objects SAP pod-reloader's lists name, each
// compared on its "<uid>.<resourceVersion>" (any write counts), and keeps
// them in pod-reloader's order for its hash.
func (r *WorkloadReconciler) selectPodReloader(ctx context.Context, namespace string, optIn annotation.OptIn) (selection, error) {
	sel := selection{data: map[string]*digest.Data{}}
	for _, list := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, optIn.PodReloaderConfigMaps}, {reference.Secret, optIn.PodReloaderSecrets}} {
		for _, name := range list.names {
			obj, err := r.lookup(ctx, namespace, list.kind, name)
			if err != nil {
				return selection{}, err
			}
			sel.podReloader = append(sel.podReloader, digest.PodReloaderEntry{
				Kind: strings.ToLower(string(list.kind)), Namespace: namespace, Name: name,
				Exists: obj.data != nil, UID: obj.uid, ResourceVersion: obj.resourceVersion,
			})
			ref := reference.Reference{Kind: list.kind, Name: name, All: true}
			if _, dup := sel.data[ref.ID()]; dup {
				continue
			}
			sel.refs = append(sel.refs, ref)
			sel.data[ref.ID()] = nil
			if obj.data != nil {
				sel.data[ref.ID()] = &digest.Data{
					Keys:         map[string]string{writtenKey: digest.Value([]byte(obj.uid + "." + obj.resourceVersion))},
					ReloaderSHA1: obj.data.ReloaderSHA1,
				}
			}
		}
	}
	return sel, nil
}

// selectWave selects what Wave hashes (reference.ForWave, plus its extra
// lists, which may name other namespaces), compared on content like Reroll's
// own dialect, and notes the required objects and keys that are missing.
func (r *WorkloadReconciler) selectWave(ctx context.Context, namespace string, optIn annotation.OptIn, template *corev1.PodTemplateSpec) (selection, error) {
	sel := selection{data: map[string]*digest.Data{}}
	refs := reference.ForWave(template)
	for _, extra := range []struct {
		kind  reference.Kind
		names []types.NamespacedName
	}{{reference.ConfigMap, optIn.WaveExtraConfigMaps}, {reference.Secret, optIn.WaveExtraSecrets}} {
		for _, nn := range extra.names {
			ref := reference.Reference{Kind: extra.kind, Name: nn.Name, All: true}
			if nn.Namespace != namespace {
				ref.Namespace = nn.Namespace
			}
			refs = append(refs, ref)
		}
	}
	for _, ref := range refs {
		if _, dup := sel.data[ref.ID()]; dup {
			continue
		}
		obj, err := r.lookup(ctx, refNamespace(ref, namespace), ref.Kind, ref.Name)
		if err != nil {
			return selection{}, err
		}
		sel.refs = append(sel.refs, ref)
		sel.data[ref.ID()] = obj.data
		if ref.Optional {
			continue
		}
		if obj.data == nil {
			sel.missing = append(sel.missing, ref.ID())
			continue
		}
		for _, k := range ref.Keys {
			if _, ok := obj.data.Keys[k]; !ok {
				sel.missing = append(sel.missing, ref.ID()+" key "+k)
			}
		}
	}
	return sel, nil
}

// waveHash computes Wave's hash of the selection. Wave hashes values, which
// the cache does not hold, so this reads each selected object from the API
// server: only when a Wave-dialect workload rolls.
func (r *WorkloadReconciler) waveHash(ctx context.Context, namespace string, sel selection) (string, error) {
	configMaps := map[string]map[string][]byte{}
	secrets := map[string]map[string][]byte{}
	for _, ref := range sel.refs {
		key := types.NamespacedName{Namespace: refNamespace(ref, namespace), Name: ref.Name}
		values := map[string][]byte{}
		if ref.Kind == reference.Secret {
			var s corev1.Secret
			if err := r.APIReader.Get(ctx, key, &s); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", fmt.Errorf("reading Secret %s for Wave's hash: %w", key, err)
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

// refNamespace is the namespace of a reference: its own, or the workload's.
func refNamespace(ref reference.Reference, workloadNamespace string) string {
	if ref.Namespace != "" {
		return ref.Namespace
	}
	return workloadNamespace
}
