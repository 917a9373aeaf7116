package changeset

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/compact"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/workload"
)

// changeSetIndex is the field index of every kind that reports progress:
// the change sets a workload's delivery.MemberAnnotation names, so the
// members of one set are listed from the cache.
const changeSetIndex = "reroll.dev/change-set"

// waveIndex is the field index of workloads that set
// delivery.WaveAnnotation themselves: "set".
const waveIndex = "reroll.dev/rollout-wave"

// Sets is what Reroll keeps for safe delivery, shared by every kind's
// reconciler: the halt records (halts.Records, from a watch: `kubectl
// reroll resume` writes them, and a change must cost no GET), the halts
// kept in memory while the API refuses their record, and the order of
// rollouts (the waves of Namespaces and workloads), computed from the
// cache at most every wavesTTL. Build it with New.
type Sets struct {
	records *halts.Records
	// reader is the manager's cache (Namespaces, workloads).
	reader client.Client
	kinds  []rollout.Kind
	scope  scope.Scope
	// readNamespaces is true when Reroll may watch Namespaces, whose
	// annotations may set waves.
	readNamespaces bool
	// key verifies the workloads' records (the metric counts only sets a
	// record signed by Reroll names).
	key digest.Key
	// bakeTime is the default bake time (--bake-time); rolloutTimeout the
	// rollout timeout of a kind without its own deadline; now the clock.
	bakeTime       time.Duration
	rolloutTimeout time.Duration
	now            func() time.Time

	mu     sync.Mutex
	order  safe.Order
	waveAt time.Time

	// unrecorded are the halts whose record could not be written (the
	// API refused it): they hold the set's workloads from memory, and
	// are written again at most every unrecordedRetry, until recorded.
	unrecordedMu sync.Mutex
	unrecorded   map[string]unrecordedHalt

	// store reads the changed objects' content, to honour the halt
	// records of an older Reroll (honourLegacy).
	store *store.Store
	// legacy is the one ConfigMap of an older Reroll's halt records, read
	// once; legacyIDs the sets its halts are held under until recorded.
	legacyMu   sync.Mutex
	legacyRead bool
	legacy     halts.Legacy
	legacyIDs  []string
}

// Config is what Sets reads and writes through.
type Config struct {
	// Records are the halt records, one ConfigMap per set in Reroll's
	// namespace (internal/halts), watched.
	Records *halts.Records
	// Reader is the manager's cache: Namespaces (metadata) and the
	// workloads of the kinds added with AddKind.
	Reader client.Client
	// Scope is what Reroll watches: only the waves of its namespaces count.
	Scope scope.Scope
	// ReadNamespaces is true when Reroll may list and watch Namespaces.
	ReadNamespaces bool
	// Key verifies the member records Reroll signed.
	Key digest.Key
	// Store holds the ConfigMaps and Secrets (the objects of a halt, an
	// older Reroll's halts).
	Store *store.Store
	// BakeTime is the bake time of workloads that set none (--bake-time).
	BakeTime time.Duration
	// RolloutTimeout bounds a rollout of a kind without its own deadline
	// (plan.RolloutDeadline).
	RolloutTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// New returns the Sets of cfg, with no kind yet (AddKind).
func New(cfg Config) *Sets {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Sets{records: cfg.Records, reader: cfg.Reader, scope: cfg.Scope, readNamespaces: cfg.ReadNamespaces, key: cfg.Key,
		store: cfg.Store, bakeTime: cfg.BakeTime, rolloutTimeout: cfg.RolloutTimeout, now: now}
}

// AddKind adds a kind whose workloads are members of change sets and
// order the waves; call it before the manager starts.
func (c *Sets) AddKind(pk rollout.Kind) { c.kinds = append(c.kinds, pk) }

// ReadsNamespaces reports whether Reroll may read Namespaces, and so
// their waves.
func (c *Sets) ReadsNamespaces() bool { return c.readNamespaces }

// Halts returns the halt records by set ID (from their watch) with the
// halts kept in memory that are not yet recorded; it writes nothing. The
// map is shared, read-only. It returns the error of the watch's first
// list, or of an older Reroll's halt records, read once.
func (c *Sets) Halts(ctx context.Context) (map[string]*safe.Halt, error) {
	return c.halts(ctx, false)
}

// RecordHeld writes again the record of each halt kept in memory (the API
// refused it) whose last try is at least 10 seconds old, and forgets those
// recorded since; it reads and writes nothing while no halt is kept so. A
// failure is logged: the halt keeps holding from memory, and is tried
// again, here or by Expire.
func (c *Sets) RecordHeld(ctx context.Context) {
	c.unrecordedMu.Lock()
	held := len(c.unrecorded)
	c.unrecordedMu.Unlock()
	if held == 0 {
		return
	}
	if _, err := c.halts(ctx, true); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the halt records to record the halts held from memory")
	}
}

// Waves returns the order of rollouts at now, from the cache (at most a
// second stale): the places of the watched Namespaces that set a wave,
// and the lowest wave of the workloads of each namespace where one sets a
// wave.
func (c *Sets) Waves(ctx context.Context, now time.Time) (safe.Order, error) {
	return c.waves(ctx, now)
}

// Expire writes again the halts held from memory and deletes the halt
// records of superseded sets until ctx ends (manager.Runnable: the leader
// runs it). It returns nil.
func (c *Sets) Expire(ctx context.Context) error { return c.expire(ctx) }

// Register adds c's metric (reroll_change_sets_halted) to
// controller-runtime's registry, in place of a previous manager's; call it
// once the kinds are added. It returns the registry's error.
func (c *Sets) Register() error { return registerLatest(c) }

// Index registers, on kind (one that reports progress), the field indexes
// of the members of change sets and of the workloads that set a wave.
func Index(ctx context.Context, indexer client.FieldIndexer, kind workload.Kind) error {
	if err := indexer.IndexField(ctx, kind.New(), changeSetIndex, indexChangeSets); err != nil {
		return fmt.Errorf("indexing %s by change set: %w", kind.Name(), err)
	}
	if err := indexer.IndexField(ctx, kind.New(), waveIndex, indexWave); err != nil {
		return fmt.Errorf("indexing %s by wave: %w", kind.Name(), err)
	}
	return nil
}

// namespaceAnnotations returns namespace's annotations from the cache;
// nil when Reroll may not read Namespaces.
func (c *Sets) namespaceAnnotations(ctx context.Context, namespace string) (map[string]string, error) {
	if !c.readNamespaces {
		return nil, nil
	}
	return scope.NamespaceAnnotations(ctx, c.reader, namespace)
}

// honourLegacy reads, once, the halt records an older Reroll kept in one
// ConfigMap, and holds their sets from memory (as a halt not yet recorded)
// under their own IDs and today's (halts.Translate), so an upgrade
// releases no halt; they are recorded, signed, within seconds, and the old
// ConfigMap is then deleted (dropLegacy).
func (c *Sets) honourLegacy(ctx context.Context) error {
	c.legacyMu.Lock()
	defer c.legacyMu.Unlock()
	if c.legacyRead || c.store == nil {
		return nil
	}
	legacy, err := c.records.Legacy(ctx)
	if err != nil {
		return err
	}
	if len(legacy.Halts) > 0 {
		order, err := c.waves(ctx, time.Now())
		if err != nil {
			return err
		}
		recorded, err := c.records.Get(ctx)
		if err != nil {
			return err
		}
		held, err := halts.Translate(c.key, legacy.Halts, order.Scope, func(kind, ns, name string) (halts.Content, bool, error) {
			o, ok, err := c.store.Get(ctx, reference.Kind(kind), ns, name)
			if err != nil || !ok {
				return halts.Content{}, false, err
			}
			return halts.Content{Keys: o.Data().Keys, SHA1: o.Data().ReloaderSHA1}, true, nil
		})
		if err != nil {
			return fmt.Errorf("reading the content of the objects of an older Reroll's halt records: %w", err)
		}
		c.unrecordedMu.Lock()
		if c.unrecorded == nil {
			c.unrecorded = map[string]unrecordedHalt{}
		}
		for id, h := range held {
			if recorded[id] != nil {
				// Recorded since (and maybe resumed): the record wins.
				continue
			}
			c.unrecorded[id] = unrecordedHalt{halt: h} // written at the next look
			c.legacyIDs = append(c.legacyIDs, id)
		}
		c.unrecordedMu.Unlock()
		ctrl.LoggerFrom(ctx).Info("Holding the halted change sets of an older Reroll's halt records until recorded again", "configMap", c.records.LegacyName(), "halted", len(legacy.Halts), "sets", strings.Join(c.legacyIDs, ","))
	}
	c.legacy, c.legacyRead = legacy, true
	return nil
}

// dropLegacy deletes an older Reroll's ConfigMap of halt records once its
// halts are all recorded again.
func (c *Sets) dropLegacy(ctx context.Context) error {
	c.legacyMu.Lock()
	defer c.legacyMu.Unlock()
	if c.legacy.UID == "" {
		return nil
	}
	c.unrecordedMu.Lock()
	pending := 0
	for _, id := range c.legacyIDs {
		if _, ok := c.unrecorded[id]; ok {
			pending++
		}
	}
	c.unrecordedMu.Unlock()
	if pending > 0 {
		return nil
	}
	if err := c.records.DropLegacy(ctx, c.legacy.UID); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Deleted an older Reroll's halt records, recorded again one signed record per set", "configMap", c.records.LegacyName())
	c.legacy = halts.Legacy{}
	return nil
}

// unrecordedHalt is a halt kept in memory, and when its write was last
// tried.
type unrecordedHalt struct {
	halt  safe.Halt
	tried time.Time
}

// unrecordedRetry is how often the record of a halt kept in memory is
// written again.
const unrecordedRetry = 10 * time.Second

// haltsExpireEvery is how often the halt records of sets that no workload
// names any more are deleted.
const haltsExpireEvery = time.Minute

// halts returns the halt records by set ID with the halts kept in memory
// that are not yet recorded; with write, it writes those again, at most
// every unrecordedRetry. The map is shared, read-only.
func (c *Sets) halts(ctx context.Context, write bool) (map[string]*safe.Halt, error) {
	if err := c.honourLegacy(ctx); err != nil {
		return nil, err
	}
	recorded, err := c.records.Get(ctx)
	if err != nil {
		return nil, err
	}
	c.unrecordedMu.Lock()
	defer c.unrecordedMu.Unlock()
	if len(c.unrecorded) == 0 {
		return recorded, nil
	}
	out := make(map[string]*safe.Halt, len(recorded)+len(c.unrecorded))
	for id, h := range recorded {
		out[id] = h
	}
	for id, u := range c.unrecorded {
		if h := recorded[id]; h.Active() && !h.Halted.Before(u.halt.Halted) {
			delete(c.unrecorded, id)
			continue
		}
		if write && time.Since(u.tried) >= unrecordedRetry {
			u.tried = time.Now()
			c.unrecorded[id] = u
			if _, err := c.records.Record(ctx, id, u.halt); err == nil {
				delete(c.unrecorded, id)
			} else {
				ctrl.LoggerFrom(ctx).Error(err, "Writing a halt record again; the halt holds from memory meanwhile", "changeSet", id)
			}
		}
		h := u.halt
		out[id] = &h
	}
	return out, nil
}

// keep holds halt h of set id from memory until it is recorded; it reports
// whether the set was not held so yet (the caller tells of the halt).
func (c *Sets) keep(id string, h safe.Halt) bool {
	c.unrecordedMu.Lock()
	defer c.unrecordedMu.Unlock()
	if c.unrecorded == nil {
		c.unrecorded = map[string]unrecordedHalt{}
	}
	_, had := c.unrecorded[id]
	if !had {
		c.unrecorded[id] = unrecordedHalt{halt: h, tried: time.Now()}
	}
	return !had
}

// named reports whether a workload whose record Reroll signed names set
// id, from the cache. The index is unverified: a tenant's forged record
// naming a set must neither keep its alert on nor its record alive.
func (c *Sets) named(ctx context.Context, id string) (bool, error) {
	for _, pk := range c.kinds {
		list := pk.Kind.NewList()
		if err := c.reader.List(ctx, list, client.MatchingFields{changeSetIndex: id}, compact.NoCopyFor(list)); err != nil {
			return false, fmt.Errorf("listing %s by %s: %w", pk.Kind.Name(), changeSetIndex, err)
		}
		named := false
		_ = eachObject(list, func(obj client.Object) {
			v, ok := plan.Verified(c.key, string(obj.GetUID()), safe.MemberAnnotation, obj.GetAnnotations())
			if rec, err := safe.ParseRecord(v); ok && err == nil && rec.Of(id) {
				named = true
			}
		})
		if named {
			return true, nil
		}
	}
	return false, nil
}

// expire writes again, every unrecordedRetry until ctx ends, the halts
// held from memory, and deletes, every haltsExpireEvery, the halt records
// of the sets no workload names any more (superseded by a newer content,
// or resumed and rolled on). Run by the leader only (manager.Runnable).
func (c *Sets) expire(ctx context.Context) error {
	// At start, not at the first change: a change costs no GET.
	if err := c.honourLegacy(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading an older Reroll's halt records; read again at the next change")
	}
	t := time.NewTicker(unrecordedRetry)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := c.halts(ctx, true); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the halt records")
		} else if err := c.dropLegacy(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Deleting an older Reroll's halt records")
		}
		if time.Since(last) < haltsExpireEvery {
			continue
		}
		last = time.Now()
		n, err := c.records.Expire(ctx, func(id string) (bool, error) { return c.named(ctx, id) })
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Deleting the halt records of superseded change sets")
			continue
		}
		if n > 0 {
			ctrl.LoggerFrom(ctx).Info("Deleted the halt records of change sets no workload names", "count", n)
		}
	}
}

// kindDeadlineGrace is how long after a kind's own progress deadline
// Reroll waits for the kind to report the failure before calling it itself.
const kindDeadlineGrace = 30 * time.Second

// wavesTTL is how stale the order may be.
const wavesTTL = time.Second

// waves returns the order of rollouts: the places of the watched
// Namespaces that set a wave, and the lowest wave of the workloads of each
// namespace where one sets a wave.
func (c *Sets) waves(ctx context.Context, now time.Time) (safe.Order, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waveAt.IsZero() && now.Sub(c.waveAt) < wavesTTL && !now.Before(c.waveAt) {
		return c.order, nil
	}
	o := safe.Order{Places: map[string]int{}, Lowest: map[string]int{}}
	if c.readNamespaces {
		nss := &metav1.PartialObjectMetadataList{}
		nss.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
		if err := c.reader.List(ctx, nss, client.UnsafeDisableDeepCopy); err != nil {
			return safe.Order{}, fmt.Errorf("listing namespaces for their waves: %w", err)
		}
		for i := range nss.Items {
			if !c.scope.Watches(nss.Items[i].Name) {
				continue
			}
			if w, ok := safe.NamespaceWave(nss.Items[i].Annotations); ok {
				o.Places[nss.Items[i].Name] = w
			}
		}
	}
	for _, pk := range c.kinds {
		list := pk.Kind.NewList()
		if err := c.reader.List(ctx, list, client.MatchingFields{waveIndex: "set"}, compact.NoCopyFor(list)); err != nil {
			return safe.Order{}, fmt.Errorf("listing %s by %s: %w", pk.Kind.Name(), waveIndex, err)
		}
		_ = eachObject(list, func(obj client.Object) {
			w, _ := safe.Wave(obj.GetAnnotations(), nil) // malformed: 0
			if lowest, ok := o.Lowest[obj.GetNamespace()]; !ok || w < lowest {
				o.Lowest[obj.GetNamespace()] = min(w, 0)
			}
		})
	}
	c.order, c.waveAt = o, now
	return o, nil
}

// indexWave is the waveIndex function.
func indexWave(obj client.Object) []string {
	if _, ok := obj.GetAnnotations()[safe.WaveAnnotation]; ok {
		return []string{"set"}
	}
	return nil
}

// indexChangeSets is the changeSetIndex function.
func indexChangeSets(obj client.Object) []string {
	// Unverified (the index function has no key): members checks each
	// record's signature before it counts.
	r, err := safe.ParseRecord(plan.Displayed(obj.GetAnnotations(), safe.MemberAnnotation))
	if err != nil {
		return nil
	}
	return r.Sets
}

// Member is obj, a workload of kind pk, as a member of its sets, with
// record rec: its bake time (its annotations, its namespace's, the
// default), and, once it rolled, its kstatus health against its rollout
// deadline. It reads the namespace from the cache.
func (c *Sets) Member(ctx context.Context, pk rollout.Kind, obj client.Object, rec safe.Record) (safe.Member, error) {
	m := safe.Member{Workload: pk.Kind.Name() + "/" + obj.GetNamespace() + "/" + obj.GetName(), Record: rec}
	nsAnnotations, err := c.namespaceAnnotations(ctx, obj.GetNamespace())
	if err != nil {
		return m, err
	}
	m.BakeTime, _ = safe.BakeTime(obj.GetAnnotations(), nsAnnotations, c.bakeTime)
	if rec.Rolled.IsZero() {
		return m, nil
	}
	u, err := toUnstructured(obj, c.reader.Scheme())
	if err != nil {
		return m, err
	}
	progress := pk.Progress.Progress(obj)
	deadline := plan.RolloutDeadline(progress, c.rolloutTimeout)
	if progress.Deadline > 0 {
		// The kind reports its own deadline (a Deployment's
		// ProgressDeadlineExceeded, set on its controller's next sync):
		// give it the first word, its signal says more.
		deadline += kindDeadlineGrace
	}
	m.State, m.Signal = safe.Health(u, rec.Rolled, deadline, c.now())
	if og, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); found && og < u.GetGeneration() {
		m.Unobserved = true
	}
	if _, evicting := obj.GetAnnotations()[eviction.ProgressAnnotation]; evicting && m.State == safe.Current {
		// A restart by eviction (an OnDelete StatefulSet or DaemonSet,
		// reroll.dev/restart: evict) is complete when its record is gone,
		// whatever the status says (kstatus calls OnDelete always Current).
		m.State, m.Signal = safe.InProgress, "restart by eviction under way"
		if !c.now().Before(rec.Rolled.Add(deadline)) {
			m.State, m.Signal = safe.Failed, fmt.Sprintf("restart by eviction not complete within %s", deadline)
		}
	}
	return m, nil
}

// Members lists the other workloads of set id (all but self), from the
// cache; only those whose member record Reroll signed count.
func (c *Sets) Members(ctx context.Context, id string, self types.UID) ([]safe.Member, error) {
	var out []safe.Member
	for _, pk := range c.kinds {
		list := pk.Kind.NewList()
		if err := c.reader.List(ctx, list, client.MatchingFields{changeSetIndex: id}); err != nil {
			return nil, fmt.Errorf("listing %s by %s: %w", pk.Kind.Name(), changeSetIndex, err)
		}
		var failed error
		_ = eachObject(list, func(obj client.Object) {
			if obj.GetUID() == self || failed != nil {
				return
			}
			v, ok := plan.Verified(c.key, string(obj.GetUID()), safe.MemberAnnotation, obj.GetAnnotations())
			if !ok {
				// Not written by Reroll: a tenant's forgery reports
				// neither a failure nor a success for the set.
				return
			}
			rec, err := safe.ParseRecord(v)
			if err != nil {
				return
			}
			m, err := c.Member(ctx, pk, obj, rec)
			if err != nil {
				failed = err
				return
			}
			out = append(out, m)
		})
		if failed != nil {
			return nil, failed
		}
	}
	return out, nil
}

// Record writes the halt record h of set id that plan.Decide decided, and
// reports whether the caller tells of it (the reconcile that wrote the
// halt does, once). A halt the API refuses holds all the same, from memory
// (keep), and is told the first time: a halt that cannot be recorded must
// not let the set roll on silently.
func (c *Sets) Record(ctx context.Context, id string, h safe.Halt) bool {
	wrote, err := c.records.Record(ctx, id, h)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording a halt; holding the change set from memory until it is recorded", "changeSet", id)
		return c.keep(id, h)
	}
	return wrote
}

// HaltAlert is the alert of halt h of set id: the change of the first
// failed workload, its changed objects, and the halt.
func HaltAlert(id string, h safe.Halt) change.Change {
	var c change.Change
	if len(h.Failed) > 0 {
		if parts := strings.SplitN(h.Failed[0], "/", 3); len(parts) == 3 {
			c.Kind, c.Namespace, c.Name = parts[0], parts[1], parts[2]
		}
	}
	for _, o := range h.Objects {
		parts := strings.SplitN(o, "/", 3)
		if len(parts) != 3 {
			continue
		}
		obj := change.Object{Kind: parts[0], Name: parts[2]}
		if parts[1] != c.Namespace {
			obj.Namespace = parts[1]
		}
		c.Objects = append(c.Objects, obj)
	}
	c.Halt = &change.Halt{ChangeSet: id, Failed: h.Failed, Signal: h.Signal}
	return c
}

// ObjectRef returns the object named "Kind/namespace/name" for an Event:
// a workload of a counted kind from the cache, a ConfigMap or Secret from
// the store; nil when it is not found.
func (c *Sets) ObjectRef(ctx context.Context, name string) runtime.Object {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) != 3 {
		return nil
	}
	kind, ns, n := parts[0], parts[1], parts[2]
	if kind == string(reference.ConfigMap) || kind == string(reference.Secret) {
		if c.store == nil {
			return nil
		}
		o, ok, err := c.store.Get(ctx, reference.Kind(kind), ns, n)
		if err != nil || !ok {
			return nil
		}
		ref := &corev1.ObjectReference{Kind: kind, APIVersion: "v1", Namespace: ns, Name: n, UID: o.GetUID()}
		return ref
	}
	for _, pk := range c.kinds {
		if pk.Kind.Name() != kind {
			continue
		}
		obj := pk.Kind.New()
		if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, obj); err == nil {
			return obj
		}
	}
	return nil
}

// toUnstructured is obj as kstatus reads it, with its apiVersion and kind.
func toUnstructured(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s for kstatus: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// eachObject calls f for each item of list.
func eachObject(list runtime.Object, f func(client.Object)) error {
	return meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			f(obj)
		}
		return nil
	})
}

// Metric of the breaker, computed from the halt records at each scrape.
var changeSetsHaltedDesc = prometheus.NewDesc("reroll_change_sets_halted",
	"Change sets halted by the circuit breaker (--halt-after-failed-rollouts), not resumed and not superseded: their workloads not yet rolled wait, pending with the reason halted.", nil, nil)

// Describe implements prometheus.Collector.
func (c *Sets) Describe(ch chan<- *prometheus.Desc) { ch <- changeSetsHaltedDesc }

// Collect implements prometheus.Collector: the halted sets that a workload
// still names (a newer content supersedes a set: its members move to the
// new one, and its record stays behind, resolved). Halt records that cannot
// be read yield no sample.
func (c *Sets) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := c.halted(ctx)
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Reading the halt records for the metrics")
		return
	}
	ch <- prometheus.MustNewConstMetric(changeSetsHaltedDesc, prometheus.GaugeValue, float64(n))
}

// halted counts the halted sets that some workload names (a record signed
// by Reroll), recorded or held from memory, from the watch and the cache.
func (c *Sets) halted(ctx context.Context) (int, error) {
	halts, err := c.halts(ctx, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for id, h := range halts {
		if !h.Active() {
			continue
		}
		named, err := c.named(ctx, id)
		if err != nil {
			return 0, err
		}
		if named {
			n++
		}
	}
	return n, nil
}

// registerLatest adds c to controller-runtime's metrics registry in place
// of any collector of the same metrics: the registry is process-wide, and
// the latest manager's halt records are the ones that count (a process
// runs one manager; tests run one after the other).
func registerLatest(c prometheus.Collector) error {
	ctrlmetrics.Registry.Unregister(c) // by its descriptors, not by identity
	return ctrlmetrics.Registry.Register(c)
}

// Start builds the Sets of cfg over the halt records in Reroll's namespace
// whose ConfigMaps are named by prefix (one per set, internal/halts,
// written as fieldManager, signed with cfg.Key; recorder tells of forged
// ones), and adds to mgr the watch of those records and Expire (run by the
// leader). cfg.Records is ignored. It returns the error of the records'
// client or of adding a runnable.
func Start(mgr manager.Manager, prefix types.NamespacedName, fieldManager string, recorder record.EventRecorder, cfg Config) (*Sets, error) {
	records, err := halts.New(mgr.GetConfig(), mgr.GetClient(), mgr.GetAPIReader(), prefix, fieldManager, cfg.Key)
	if err != nil {
		return nil, err
	}
	records.Recorder = recorder
	// The halt records, read at each change that rolls: from a watch of
	// their one ConfigMap, never from the API server per change.
	if err := mgr.Add(records); err != nil {
		return nil, fmt.Errorf("adding the watch of the halt records: %w", err)
	}
	cfg.Records = records
	sets := New(cfg)
	// The records of superseded sets go; the leader deletes them.
	if err := mgr.Add(manager.RunnableFunc(sets.Expire)); err != nil {
		return nil, fmt.Errorf("adding the expiry of the halt records: %w", err)
	}
	return sets, nil
}
