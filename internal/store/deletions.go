package store

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/reroll/reroll/internal/reference"
)

// DeletionMemory is how long the Store remembers a deletion it saw: longer
// than the first sight of every workload takes at install (about 200 s for
// 10,000 workloads at the default --kube-api-qps; docs/benchmarks.md).
const DeletionMemory = 15 * time.Minute

// Deletion is one deletion the Store saw on its watch.
type Deletion struct {
	// At is when the Store saw it (this process's clock, whole seconds).
	At time.Time
	// ResourceVersion is the revision of the deletion as a number (0 when
	// it does not parse as one).
	ResourceVersion uint64
}

// deletions remembers, for DeletionMemory, the ConfigMaps and Secrets
// deleted while the Store watched: the API keeps nothing of a deleted
// object, and the first-sight rule needs to know that an object a workload
// reads was deleted after the workload was created (--reload-on-delete).
// It lives in memory: a deletion made while no replica ran is not known.
type deletions struct {
	mu      sync.Mutex
	byKey   map[string]Deletion
	keep    time.Duration
	now     func() time.Time
	sweptAt time.Time
}

func newDeletions(keep time.Duration, now func() time.Time) *deletions {
	return &deletions{byKey: map[string]Deletion{}, keep: keep, now: now}
}

func deletionKey(kind reference.Kind, namespace, name string) string {
	return string(kind) + "/" + namespace + "/" + name
}

// watched returns the watch filter of kind's informers: it notes each
// DELETED event before the informer removes the object from its store, so
// that no reader sees the object gone and the deletion unknown.
func (d *deletions) watched(kind reference.Kind) watch.FilterFunc {
	return func(e watch.Event) (watch.Event, bool) {
		if e.Type != watch.Deleted {
			return e, true
		}
		if m, err := meta.Accessor(e.Object); err == nil {
			rv, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
			d.add(deletionKey(kind, m.GetNamespace(), m.GetName()), rv)
		}
		return e, true
	}
}

func (d *deletions) add(key string, rv uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if now.Sub(d.sweptAt) > time.Minute {
		for k, v := range d.byKey {
			if now.Sub(v.At) > d.keep {
				delete(d.byKey, k)
			}
		}
		d.sweptAt = now
	}
	d.byKey[key] = Deletion{At: now.Truncate(time.Second).UTC(), ResourceVersion: rv}
}

func (d *deletions) get(key string) (Deletion, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.byKey[key]
	if !ok || d.now().Sub(v.At) > d.keep {
		return Deletion{}, false
	}
	return v, true
}

// Deleted returns the latest deletion of the object of kind named
// namespace/name that the Store saw in the last DeletionMemory, and whether
// there was one. An object deleted and created again exists: Get says so.
func (s *Store) Deleted(kind reference.Kind, namespace, name string) (Deletion, bool) {
	return s.deletions.get(deletionKey(kind, namespace, name))
}
