package source

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

// LegacyDigests keeps the digests of ConfigMaps and Secrets under an older
// key, by object and revision, for Legacy: at most maxLegacyDigests objects
// (all are dropped when full; they are read again at need). The zero value
// is ready; one is shared by the reconciles of a workload kind.
type LegacyDigests struct {
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

// maxLegacyDigests bounds LegacyDigests.
const maxLegacyDigests = 4096

func (l *LegacyDigests) get(k legacyDigestKey, resourceVersion string) (plan.Object, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.m[k]
	return d.obj, ok && d.resourceVersion == resourceVersion
}

func (l *LegacyDigests) put(k legacyDigestKey, obj plan.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxLegacyDigests {
		l.m = map[legacyDigestKey]legacyDigest{}
	}
	l.m[k] = legacyDigest{resourceVersion: obj.ResourceVersion, obj: obj}
}

// Legacy is the planner's view for a record of an older key: the
// ConfigMaps and Secrets the store holds, read again from the API server
// and digested under key (one of digest.Key.Older), values dropped at
// once. An object the store does not hold (outside the watches, or
// filtered out) counts as absent, as in Cache. SecretProviderClasses and
// names come from Cache: their digests are not keyed.
type Legacy struct {
	Cache
	// Reader reads from the API server.
	Reader client.Reader
	// Key is the older key (one of digest.Key.Older).
	Key digest.Key
	// Memo keeps what was digested, per object revision.
	Memo *LegacyDigests
}

// Object implements plan.Source.
func (s Legacy) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	var obj client.Object
	switch kind {
	case reference.ConfigMap:
		obj = &corev1.ConfigMap{}
	case reference.Secret:
		obj = &corev1.Secret{}
	default:
		return s.Cache.Object(kind, namespace, name)
	}
	cached, ok, err := s.Cache.Object(kind, namespace, name)
	if err != nil || !ok {
		return plan.Object{}, ok, err
	}
	memoKey := legacyDigestKey{key: s.Key.ID(), kind: string(kind), namespace: namespace, name: name}
	if o, ok := s.Memo.get(memoKey, cached.ResourceVersion); ok {
		return o, true, nil
	}
	if err := s.Reader.Get(s.Ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return plan.Object{}, false, nil
		}
		return plan.Object{}, false, fmt.Errorf("reading %s %s/%s to compare a legacy record: %w", kind, namespace, name, err)
	}
	d, _ := s.Key.Of(obj)
	ann := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if k != lastAppliedAnnotation {
			ann[k] = v
		}
	}
	o := plan.Object{Annotations: ann, Data: d, UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}
	s.Memo.put(memoKey, o)
	return o, true, nil
}

// lastAppliedAnnotation holds kubectl's copy of the whole object, data
// included; the planner never reads it.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
