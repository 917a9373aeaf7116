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
	if optIn.Dialect == annotation.DialectPodReloader {
		return r.selectPodReloader(ctx, namespace, optIn)
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
	obj := newObject(kind)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return cached{}, nil
		}
		return cached{}, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	d, _ := digest.Of(obj)
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
