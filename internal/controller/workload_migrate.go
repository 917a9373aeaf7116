package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// decide asks the planner what to do with the workload in, reading
// ConfigMaps and Secrets from the store.
//
// A record made under an older key (digest.Key.Older: during a rotation,
// the previous key; before Options.LegacyRecordsUntil only, the legacy
// scheme of the current or previous key, digests of the value alone, by a
// Reroll before digests were bound to their place) is compared under that
// key first, from values read from the API server (the store holds only
// the current key's digests; legacyDigests keeps them per object revision,
// so an object is read once per change, not once per reconcile): a change
// made while Reroll was upgraded, or its key rotated, still rolls. The
// record written is always the current key's: no digest of an older
// scheme is ever written (the legacy scheme, bound to no place, would
// publish the HMAC of a value a tenant chose). Once nothing under the
// older key is left to act on, the record is made again under the current
// key, as the planner does for a record of another key, which rolls
// nothing.
func (r *WorkloadReconciler) decide(ctx context.Context, opts plan.Options, in plan.Input) (plan.Plan, error) {
	src := cacheSource{ctx: ctx, c: r.Client, store: r.Options.Store}
	var older *digest.Key
	for _, k := range opts.Key.Older() {
		if k.IsLegacy() && !in.Now.Before(r.Options.LegacyRecordsUntil) {
			// Past the migration deadline: a record that names the legacy
			// scheme now is a tenant's, or was missed; it counts as a
			// record of another key.
			continue
		}
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
	p, err := plan.Decide(lo, in, legacySource{cacheSource: src, reader: r.APIReader, key: *older, memo: &r.legacyDigests})
	if err != nil {
		return p, err
	}
	switch p.Outcome {
	case plan.Unchanged, plan.Skipped, plan.DamagedRecord:
		// Nothing left to roll under the older key.
		return plan.Decide(opts, in, src)
	}
	// Everything written that derives from digests is the current key's:
	// the record, the config hash of the pod template, a Job's name, the
	// notification's hash.
	current, err := plan.Decide(opts, in, src)
	if err != nil {
		return p, err
	}
	if v := p.Annotations[plan.RecordAnnotation]; v != "" {
		if rec := current.Annotations[plan.RecordAnnotation]; rec != "" {
			p.Annotations[plan.RecordAnnotation], p.Annotations[plan.KeyAnnotation] = rec, opts.Key.ID()
			p.Record = current.Record
		} else {
			delete(p.Annotations, plan.RecordAnnotation)
			delete(p.Annotations, plan.KeyAnnotation)
		}
	}
	hash := current.Record.ConfigHash()
	if p.Roll.Trigger.Annotation == trigger.ConfigHashAnnotation {
		p.Roll.Trigger.Value = hash
	}
	if p.Roll.Job != "" {
		p.Roll.Job = workload.JobName(in.Name, hash)
	}
	if p.Notification != nil {
		p.Notification.Hash = hash
	}
	return p, nil
}

// legacyDigests keeps the digests of ConfigMaps and Secrets under an older
// key, by object and revision, for legacySource: at most
// maxLegacyDigests objects (all are dropped when full; they are read again
// at need).
type legacyDigests struct {
	mu sync.Mutex
	m  map[legacyDigestKey]legacyDigest
}

type legacyDigestKey struct {
	key, kind, namespace, name string
}

type legacyDigest struct {
	resourceVersion string
	obj             plan.Object
}

// maxLegacyDigests bounds legacyDigests.
const maxLegacyDigests = 4096

func (l *legacyDigests) get(k legacyDigestKey, resourceVersion string) (plan.Object, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.m[k]
	return d.obj, ok && d.resourceVersion == resourceVersion
}

func (l *legacyDigests) put(k legacyDigestKey, obj plan.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxLegacyDigests {
		l.m = map[legacyDigestKey]legacyDigest{}
	}
	l.m[k] = legacyDigest{resourceVersion: obj.ResourceVersion, obj: obj}
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
	memo   *legacyDigests
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
	cached, ok, err := s.cacheSource.Object(kind, namespace, name)
	if err != nil || !ok {
		return plan.Object{}, ok, err
	}
	memoKey := legacyDigestKey{key: s.key.ID(), kind: string(kind), namespace: namespace, name: name}
	if o, ok := s.memo.get(memoKey, cached.ResourceVersion); ok {
		return o, true, nil
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
	o := plan.Object{Annotations: ann, Data: d, UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}
	s.memo.put(memoKey, o)
	return o, true, nil
}

// lastAppliedAnnotation holds kubectl's copy of the whole object, data
// included; the planner never reads it.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
