package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/reference"
)

// Options says which ConfigMaps and Secrets a Store watches, and how it
// digests their values.
type Options struct {
	// Kinds are the kinds watched: reference.ConfigMap, reference.Secret or
	// both. Any other kind is refused by New.
	Kinds []reference.Kind
	// Namespaces, when set, are the only namespaces watched, one watch per
	// namespace and kind, so that Reroll needs no cluster-wide list
	// permission (--namespaces).
	Namespaces []string
	// IgnoredNamespaces are never watched: a field selector on the watch
	// (--namespaces-to-ignore).
	IgnoredNamespaces []string
	// LabelSelector, when set and not empty, limits the watch to matching
	// objects, on the API server's side (--resource-label-selector).
	LabelSelector labels.Selector
	// Key digests every value (HMAC-SHA-256 under the installation key; the
	// zero Key means plain SHA-256).
	Key digest.Key
}

// Store is Reroll's cache of ConfigMaps and Secrets: client-go shared
// informers (one per kind, or per kind and namespace with
// Options.Namespaces) whose store holds a *digest.Object per object, never
// a value and never the typed object (see digest.Object for why). It is a
// manager.Runnable that runs in every replica, leader or not, as
// controller-runtime's cache does: a replica that becomes leader starts
// with a synced store.
//
// Reads wait until the informers have synced, as controller-runtime's cache
// does, so that no decision is made on a partial view.
type Store struct {
	kinds map[reference.Kind]*informerSet
	// deletions remembers the objects deleted recently (see Deleted).
	deletions *deletions
}

// informerSet is the informers of one kind.
type informerSet struct {
	// all is the cluster-wide informer, or nil with Options.Namespaces.
	all toolscache.SharedIndexInformer
	// byNamespace are the informers of Options.Namespaces.
	byNamespace map[string]toolscache.SharedIndexInformer
}

// ErrNotWatched is returned by Get and Names for a kind or a namespace
// outside the Store's watches.
var ErrNotWatched = errors.New("not watched")

// New returns a Store for o, talking to the API server of cfg in protobuf.
// It returns an error for a kind other than ConfigMap and Secret, or when
// the client cannot be built from cfg. Nothing is read until Start.
func New(cfg *rest.Config, o Options) (*Store, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the client of the ConfigMap and Secret informers: %w", err)
	}
	s := &Store{kinds: map[reference.Kind]*informerSet{}, deletions: newDeletions(DeletionMemory, time.Now)}
	tweak := func(lo *metav1.ListOptions) {
		if o.LabelSelector != nil && !o.LabelSelector.Empty() {
			lo.LabelSelector = o.LabelSelector.String()
		}
		if len(o.IgnoredNamespaces) > 0 {
			sels := make([]fields.Selector, 0, len(o.IgnoredNamespaces))
			for _, ns := range o.IgnoredNamespaces {
				sels = append(sels, fields.OneTermNotEqualSelector("metadata.namespace", ns))
			}
			lo.FieldSelector = fields.AndSelectors(sels...).String()
		}
	}
	for _, kind := range o.Kinds {
		if kind != reference.ConfigMap && kind != reference.Secret {
			return nil, fmt.Errorf("a Store watches ConfigMaps and Secrets, not %s", kind)
		}
		w := &informerSet{}
		namespaces := o.Namespaces
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		} else {
			w.byNamespace = map[string]toolscache.SharedIndexInformer{}
		}
		for _, ns := range namespaces {
			inf := newInformer(c, kind, ns, tweak, s.deletions.watched(kind))
			seen := newInFlight(inf.GetIndexer())
			if err := inf.SetTransform(compact(o.Key, seen, time.Now)); err != nil {
				return nil, fmt.Errorf("setting the %s transform: %w", kind, err)
			}
			if _, err := inf.AddEventHandler(seen); err != nil {
				return nil, fmt.Errorf("tracking the %s events: %w", kind, err)
			}
			// Reloader's reloader_events_received_total counts what the
			// informers deliver.
			if _, err := inf.AddEventHandler(metrics.InformerEvents(string(kind))); err != nil {
				return nil, fmt.Errorf("counting the %s events: %w", kind, err)
			}
			if ns == metav1.NamespaceAll {
				w.all = inf
			} else {
				w.byNamespace[ns] = inf
			}
		}
		s.kinds[kind] = w
	}
	return s, nil
}

// newInformer returns the informer of kind (ConfigMap or Secret) in
// namespace (all with ""), its list and watch options set by tweak. It is
// what client-go's generated informers build, on the core/v1 client alone
// (the generated factory would link every API group's informers into the
// binary), with the namespace index that Names reads.
func newInformer(c corev1client.CoreV1Interface, kind reference.Kind, namespace string, tweak func(*metav1.ListOptions), deleted watch.FilterFunc) toolscache.SharedIndexInformer {
	var lw *toolscache.ListWatch
	var example runtime.Object
	if kind == reference.Secret {
		example, lw = &corev1.Secret{}, listWatch(c.Secrets(namespace), tweak, deleted)
	} else {
		example, lw = &corev1.ConfigMap{}, listWatch(c.ConfigMaps(namespace), tweak, deleted)
	}
	// With the list-watch semantics of the client, so that the reflector
	// streams the initial list (WatchList) and the transform runs while it
	// streams: no full copy of the cluster's Secrets is ever held.
	return toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, c), example, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
}

// lister is the part of a typed client (SecretInterface,
// ConfigMapInterface) that an informer uses.
type lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// listWatch returns the list and watch of c, their options set by tweak;
// every watch event passes through seen before the informer gets it.
func listWatch[L runtime.Object](c lister[L], tweak func(*metav1.ListOptions), seen watch.FilterFunc) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			tweak(&lo)
			return c.List(ctx, lo)
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			tweak(&lo)
			w, err := c.Watch(ctx, lo)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, seen), nil
		},
	}
}

// compact is the informers' transform: digest.Key.Transform, with the
// namespace of every object made one shared string (thousands of objects
// share a few namespaces; the decoder makes a string per object), and the
// data change history carried from the latest Object seen for the same key
// (digest.Object.SinceChange; inFlight): a change is told from a write of
// metadata by comparing digests, live, which managedFields alone cannot do.
func compact(k digest.Key, seen *inFlight, now func() time.Time) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		m, isMeta := obj.(metav1.Object)
		out, err := k.Transform(obj)
		o, ok := out.(*digest.Object)
		if !ok || !isMeta || out == obj {
			return out, err
		}
		o.SetNamespace(unique.Make(o.GetNamespace()).Value())
		key := m.GetNamespace() + "/" + m.GetName()
		if p := seen.latest(key); p != nil {
			o.SinceChange(p, now())
		}
		seen.transformed(key, o)
		return out, err
	}
}

// inFlight finds, for the transform, the latest Object seen for a key: the
// one the informer's indexer holds, or a newer one transformed but not yet
// indexed. client-go runs the transform when the watch queues an event and
// updates the indexer only when the queue is processed, so a create and an
// update that arrive together (the watch lagged, then delivered both) would
// otherwise see no previous Object for the update, and a data change in the
// second of the object's creation (invisible in managedFields) would be
// lost. It is an informer event handler: an Object leaves it once the
// informer has indexed it and notified its handlers, so it holds only the
// events in the queue, not a copy of the cache.
type inFlight struct {
	held toolscache.Indexer

	mu sync.Mutex
	// pending is the latest Object transformed per key and not yet handled.
	pending map[string]*digest.Object
}

func newInFlight(held toolscache.Indexer) *inFlight {
	return &inFlight{held: held, pending: map[string]*digest.Object{}}
}

// latest returns the newest Object seen for key, or nil when none is.
func (f *inFlight) latest(key string) *digest.Object {
	f.mu.Lock()
	p := f.pending[key]
	f.mu.Unlock()
	if p != nil {
		return p
	}
	if prev, exists, _ := f.held.GetByKey(key); exists {
		p, _ = prev.(*digest.Object)
	}
	return p
}

// transformed notes o as the newest Object of key.
func (f *inFlight) transformed(key string, o *digest.Object) {
	f.mu.Lock()
	f.pending[key] = o
	f.mu.Unlock()
}

// handled forgets obj once the informer has indexed it, unless a newer
// Object of its key is already queued.
func (f *inFlight) handled(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(*digest.Object)
	if !ok {
		return
	}
	key := o.GetNamespace() + "/" + o.GetName()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[key] == o {
		delete(f.pending, key)
		if len(f.pending) == 0 {
			// Go keeps a map's buckets after deletes: the initial list
			// queues every object at once.
			f.pending = map[string]*digest.Object{}
		}
	}
}

// OnAdd implements toolscache.ResourceEventHandler.
func (f *inFlight) OnAdd(obj any, _ bool) { f.handled(obj) }

// OnUpdate implements toolscache.ResourceEventHandler.
func (f *inFlight) OnUpdate(_, obj any) { f.handled(obj) }

// OnDelete implements toolscache.ResourceEventHandler.
func (f *inFlight) OnDelete(obj any) { f.handled(obj) }

// informers returns the informers of w.
func (w *informerSet) informers() []toolscache.SharedIndexInformer {
	if w.all != nil {
		return []toolscache.SharedIndexInformer{w.all}
	}
	out := make([]toolscache.SharedIndexInformer, 0, len(w.byNamespace))
	for _, inf := range w.byNamespace {
		out = append(out, inf)
	}
	return out
}

// Start runs the informers until ctx is done (manager.Runnable). It returns
// nil.
func (s *Store) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, w := range s.kinds {
		for _, inf := range w.informers() {
			wg.Go(func() { inf.RunWithContext(ctx) })
		}
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica runs the Store.
func (s *Store) NeedLeaderElection() bool { return false }

// HasSynced reports whether every informer holds its initial list.
func (s *Store) HasSynced() bool {
	for _, w := range s.kinds {
		for _, inf := range w.informers() {
			if !inf.HasSynced() {
				return false
			}
		}
	}
	return true
}

// WaitForSync waits until HasSynced or ctx is done, and returns ctx's
// error in the latter case.
func (s *Store) WaitForSync(ctx context.Context) error {
	if s.HasSynced() {
		return nil
	}
	var synced []toolscache.InformerSynced
	for _, w := range s.kinds {
		for _, inf := range w.informers() {
			synced = append(synced, inf.HasSynced)
		}
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("waiting for the ConfigMap and Secret informers to sync: %w", context.Cause(ctx))
	}
	return nil
}

// Watches reports whether the Store watches kind.
func (s *Store) Watches(kind reference.Kind) bool {
	_, ok := s.kinds[kind]
	return ok
}

// informer returns the informer that holds the objects of kind in
// namespace, or an error wrapping ErrNotWatched.
func (s *Store) informer(kind reference.Kind, namespace string) (toolscache.SharedIndexInformer, error) {
	w, ok := s.kinds[kind]
	if !ok {
		return nil, fmt.Errorf("%ss are %w (--resources-to-ignore)", kind, ErrNotWatched)
	}
	if w.all != nil {
		return w.all, nil
	}
	if inf, ok := w.byNamespace[namespace]; ok {
		return inf, nil
	}
	return nil, fmt.Errorf("%ss in namespace %s are %w (--namespaces)", kind, namespace, ErrNotWatched)
}

// Get returns the cached object of kind named namespace/name, shared with
// the informer (read-only), and whether it exists. It waits for the
// informers to sync. It returns an error wrapping ErrNotWatched outside the
// watches, and ctx's error when ctx ends first.
func (s *Store) Get(ctx context.Context, kind reference.Kind, namespace, name string) (*digest.Object, bool, error) {
	inf, err := s.informer(kind, namespace)
	if err != nil {
		return nil, false, err
	}
	if err := s.WaitForSync(ctx); err != nil {
		return nil, false, err
	}
	item, exists, err := inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, false, err
	}
	o, ok := item.(*digest.Object)
	if !ok {
		return nil, false, fmt.Errorf("the %s informer holds a %T, not a *digest.Object", kind, item)
	}
	return o, true, nil
}

// Names returns the names of the cached objects of kind in namespace, in
// no particular order, with the errors of Get.
func (s *Store) Names(ctx context.Context, kind reference.Kind, namespace string) ([]string, error) {
	inf, err := s.informer(kind, namespace)
	if err != nil {
		return nil, err
	}
	if err := s.WaitForSync(ctx); err != nil {
		return nil, err
	}
	keys, err := inf.GetIndexer().IndexKeys(toolscache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("listing the cached %ss of %s: %w", kind, namespace, err)
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		_, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Source returns a controller-runtime source of the events of kind (its
// objects are *digest.Object), handled by h after predicates. Controllers
// built with it wait for the informers to sync before their workers start.
// It returns an error wrapping ErrNotWatched if the Store does not watch
// kind.
func (s *Store) Source(kind reference.Kind, h handler.EventHandler, predicates ...predicate.Predicate) (source.SyncingSource, error) {
	w, ok := s.kinds[kind]
	if !ok {
		return nil, fmt.Errorf("%ss are %w (--resources-to-ignore)", kind, ErrNotWatched)
	}
	return &syncingSource{store: s, informers: w.informers(), handler: h, predicates: predicates}, nil
}

// syncingSource is source.Informer over several informers, with the sync
// wait that source.Informer lacks.
type syncingSource struct {
	store      *Store
	informers  []toolscache.SharedIndexInformer
	handler    handler.EventHandler
	predicates []predicate.Predicate
}

// Start implements source.Source.
func (s *syncingSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	for _, inf := range s.informers {
		if err := (&source.Informer{Informer: inf, Handler: s.handler, Predicates: s.predicates}).Start(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *syncingSource) WaitForSync(ctx context.Context) error { return s.store.WaitForSync(ctx) }

// String implements fmt.Stringer, for controller-runtime's logs.
func (s *syncingSource) String() string { return "ConfigMap and Secret store" }
