package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// decide asks the planner what to do with the workload in, reading
// ConfigMaps and Secrets from the store.
//
// A record made under an older key (digest.Key.Older: the legacy scheme of
// the current key, digests of the value alone, by a Reroll before digests
// were bound to their place; during a rotation, the previous key) is
// compared under that key first, from values read from the API server (the
// store holds only the current key's digests): a change made while Reroll
// was upgraded, or its key rotated, still rolls, and the older record is
// kept until nothing under it is left to act on. Only then
// is the record made again under the bound scheme, as the planner does for
// a record of another key, which rolls nothing. Each migrated workload thus
// costs one read per consumed object, once.
func (r *WorkloadReconciler) decide(ctx context.Context, opts plan.Options, in plan.Input) (plan.Plan, error) {
	src := cacheSource{ctx: ctx, c: r.Client, store: r.Options.Store}
	var older *digest.Key
	for _, k := range opts.Key.Older() {
		if in.Annotations[plan.KeyAnnotation] == k.ID() {
			older = &k
			break
		}
	}
	if older == nil {
		return plan.Decide(opts, in, src)
	}
	lo := opts
	lo.Key = *older
	p, err := plan.Decide(lo, in, legacySource{cacheSource: src, reader: r.APIReader, key: *older})
	if err != nil {
		return p, err
	}
	switch p.Outcome {
	case plan.Unchanged, plan.Skipped, plan.DamagedRecord:
		// Nothing left to roll under the legacy scheme.
		return plan.Decide(opts, in, src)
	}
	return p, nil
}

// legacySource is the planner's view for a record of an older key: the
// ConfigMaps and Secrets the store holds, read again from the API server
// and digested under key (one of digest.Key.Older), values dropped at
// once. An object the store does not hold (outside the watches, or
// filtered out) counts as absent, as in cacheSource. SecretProviderClasses
// and names come from cacheSource: their digests are not keyed.
type legacySource struct {
	cacheSource
	reader client.Reader
	key    digest.Key
}

// Object implements plan.Source.
func (s legacySource) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	var obj client.Object
	switch kind {
	case reference.ConfigMap:
		obj = &corev1.ConfigMap{}
	case reference.Secret:
		obj = &corev1.Secret{}
	default:
		return s.cacheSource.Object(kind, namespace, name)
	}
	if _, ok, err := s.cacheSource.Object(kind, namespace, name); err != nil || !ok {
		return plan.Object{}, ok, err
	}
	if err := s.reader.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return plan.Object{}, false, nil
		}
		return plan.Object{}, false, fmt.Errorf("reading %s %s/%s to compare a legacy record: %w", kind, namespace, name, err)
	}
	d, _ := s.key.Of(obj)
	ann := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if k != lastAppliedAnnotation {
			ann[k] = v
		}
	}
	return plan.Object{Annotations: ann, Data: d, UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}, true, nil
}

// lastAppliedAnnotation holds kubectl's copy of the whole object, data
// included; the planner never reads it.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
