package index

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// The names controller-runtime's informer cache gives a field index
// registered with IndexField and its values (pkg/cache/internal, not
// importable: FieldIndexName and KeyToNamespacedKey): the index "field:"
// + the field, each value once as "<namespace>/<value>" and once as
// "__all_namespaces/<value>". TestCachedByField_FindsWhatAListOfTheCacheFinds in internal/controller
// compares what Cached finds with a List of the cache, and fails if they
// change.
const (
	fieldIndexPrefix = "field:"
	allNamespaces    = "__all_namespaces"
)

// indexed is what a client-go SharedIndexInformer (the informer of
// controller-runtime's cache of one or all namespaces) has: its store.
type indexed interface {
	GetIndexer() toolscache.Indexer
}

// CachedByField returns the objects of obj's type that the cache's
// informer holds under value in field, a field index registered with
// IndexField, in namespace ("" for all namespaces): what a List with
// client.InNamespace(namespace) and client.MatchingFields{field: value}
// gives, in no particular order, but neither copied nor decoded (a
// Deployment, StatefulSet or DaemonSet as its *compact.Workload). The
// caller reads them (their metadata) and must not change them. ok is
// false when the informer has no store of its own to read (a cache of
// several namespaces, --namespaces, wraps one informer per namespace):
// the caller lists then. The error is GetInformer's (which, like a List,
// waits for the informer's sync) or the indexer's (field not indexed).
func CachedByField(ctx context.Context, informers cache.Informers, obj client.Object, field, namespace, value string) (_ []client.Object, ok bool, _ error) {
	if namespace == "" {
		namespace = allNamespaces
	}
	return cached(ctx, informers, obj, fieldIndexPrefix+field, namespace+"/"+value)
}

// CachedInNamespace is CachedByField for every object of obj's type in
// namespace (client-go's namespace index, which a List with
// client.InNamespace reads).
func CachedInNamespace(ctx context.Context, informers cache.Informers, obj client.Object, namespace string) (_ []client.Object, ok bool, _ error) {
	return cached(ctx, informers, obj, toolscache.NamespaceIndex, namespace)
}

// cached returns the objects the indexer of obj's informer holds under
// value in index name.
func cached(ctx context.Context, informers cache.Informers, obj client.Object, name, value string) ([]client.Object, bool, error) {
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, false, err
	}
	s, ok := inf.(indexed)
	if !ok {
		return nil, false, nil
	}
	items, err := s.GetIndexer().ByIndex(name, value)
	if err != nil {
		return nil, false, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		o, ok := item.(client.Object)
		if !ok {
			return nil, false, fmt.Errorf("the cache holds a %T, which is not an object", item)
		}
		out = append(out, o)
	}
	return out, true, nil
}

// Cache finds the objects of one kind that a field index or a namespace
// holds in the manager's cache: from the informer's own indexer when
// there is one to read (CachedByField, CachedInNamespace: no copy, no
// decoding), else by a List of Reader (a compact workload is decoded then:
// compact.NoCopyFor).
type Cache struct {
	// Informers is the manager's cache; nil always lists through Reader.
	Informers cache.Informers
	// Reader lists when Informers give no indexer to read (a cache of
	// several namespaces, --namespaces).
	Reader client.Reader
}

// ByField returns up to limit (all when 0) of the objects of obj's type
// in namespace ("" for all) that field index field holds under value, in
// no particular order. list is an empty list of obj's kind, used only
// when the lookup lists. The objects may be the cache's own: the caller
// must not change them. The error is the indexer's (see CachedByField) or
// the List's.
func (c Cache) ByField(ctx context.Context, obj client.Object, list client.ObjectList, field, namespace, value string, limit int) ([]client.Object, error) {
	if c.Informers != nil {
		objs, ok, err := CachedByField(ctx, c.Informers, obj, field, namespace, value)
		if err != nil {
			return nil, err
		}
		if ok {
			if limit > 0 && len(objs) > limit {
				objs = objs[:limit]
			}
			return objs, nil
		}
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingFields{field: value}, compact.NoCopyFor(list)}
	if limit > 0 {
		opts = append(opts, client.Limit(int64(limit)))
	}
	return c.list(ctx, list, opts...)
}

// InNamespace returns the objects of obj's type in namespace, as ByField
// returns them.
func (c Cache) InNamespace(ctx context.Context, obj client.Object, list client.ObjectList, namespace string) ([]client.Object, error) {
	if c.Informers != nil {
		objs, ok, err := CachedInNamespace(ctx, c.Informers, obj, namespace)
		if err != nil || ok {
			return objs, err
		}
	}
	return c.list(ctx, list, client.InNamespace(namespace), compact.NoCopyFor(list))
}

// list lists into list with opts and returns its items.
func (c Cache) list(ctx context.Context, list client.ObjectList, opts ...client.ListOption) ([]client.Object, error) {
	if err := c.Reader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, meta.LenList(list))
	err := meta.EachListItem(list, func(item runtime.Object) error {
		o, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("the list holds a %T, which is not an object", item)
		}
		out = append(out, o)
		return nil
	})
	return out, err
}
