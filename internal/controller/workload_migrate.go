package controller

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

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
