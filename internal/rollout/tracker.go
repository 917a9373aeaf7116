package rollout

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// Index is the name of the field index of the concurrent rollout bound, on
// every kind that reports progress (see Indexer for its values). Register
// it on the manager's cache with Indexer before the cache starts; the
// Tracker lists by it (client.MatchingFields). The running set is derived
// from the objects alone, so a restarted Reroll counts exactly what runs.
const Index = "reroll.dev/rollout"

// Values of Index.
const (
	indexRunning = "running"
	indexPending = "pending"
	indexWaiting = "waiting"
)

// Tracker counts the rollouts Reroll started across every kind, for the
// concurrent rollout bound. Its lock (Lock, Unlock) makes count, decide and
// write one step for bounded workloads, so that concurrent reconciles cannot
// both take the last slot. inflight holds the rollouts written but not yet
// seen in the cache; each entry goes once the cache shows its stamp (an
// in-memory bridge over the cache's lag, never the truth after a restart).
// Make one with NewTracker; the zero Tracker is not usable.
type Tracker struct {
	mu       sync.Mutex
	kinds    []Kind
	inflight map[types.UID]inflight
	// timeout is --rollout-timeout.
	timeout time.Duration
	// key verifies the signed state annotations (plan.Sign).
	key digest.Key
	// reader is the manager's cache, for the metrics.
	reader client.Reader
	now    func() time.Time
	// optIns are the opt-in pins waiting for a slot (WaitOptIn), oldest
	// first, each once; WakeOldest wakes them after the changes waiting.
	// Memory only: a restart decides each of them again at first sight.
	// optMu guards them (not mu: they are noted and taken while a
	// reconcile holds mu).
	optMu    sync.Mutex
	optIns   []optIn
	optInSet map[types.UID]bool
}

// optIn is one opt-in pin waiting for a slot.
type optIn struct {
	uid  types.UID
	kind workload.Kind
	key  client.ObjectKey
}

// Kind is a workload kind whose status reports rollout progress, as the
// bound counts it.
type Kind struct {
	// Kind is the workload kind.
	Kind workload.Kind
	// Progress reads a workload's rollout progress from its status (for a
	// Deployment: observedGeneration, the updated and available replicas
	// and progressDeadlineSeconds, as `kubectl rollout status` reads them).
	Progress workload.Progresser
	// Wake carries requests to reconcile the kind's workloads when a slot
	// frees (see WakeOldest), for a controller-runtime channel source; nil
	// wakes none. Make it with room for WakeBuffer events.
	Wake chan<- event.GenericEvent
}

// WakeBuffer is the room for wake-ups per kind (Kind.Wake), in events; a
// wake-up that does not fit is dropped (the workload is decided again on
// its Recheck anyway).
const WakeBuffer = 256

// wakeCount is how many of the oldest waiting workloads a freed slot wakes:
// more than one, in case the oldest is held by its Namespace's bound.
const wakeCount = 3

type inflight struct {
	kind workload.Kind
	key  client.ObjectKey
	// before is the resourceVersion the rollout's patch was guarded by:
	// once the cache holds another, it holds the patch (or a later write).
	before string
	until  time.Time
}

// NewTracker returns a Tracker that counts no kind yet (see Add). timeout
// is --rollout-timeout: how long a rollout of a kind without
// progressDeadlineSeconds (StatefulSet, DaemonSet) counts as running at
// most. key verifies the signed rolled-at and pending annotations; reader
// is the manager's cache, read by the metrics (Collect); now is the clock.
func NewTracker(timeout time.Duration, key digest.Key, reader client.Reader, now func() time.Time) *Tracker {
	return &Tracker{inflight: map[types.UID]inflight{}, timeout: timeout, key: key, reader: reader, now: now}
}

// Add counts the rollouts of k too. Call it while setting up, before the
// manager starts: it is not safe while the Tracker is in use.
func (t *Tracker) Add(k Kind) { t.kinds = append(t.kinds, k) }

// Lock takes the Tracker's lock, which Count and Started need: hold it from
// the count through the decision to the rollout's write.
func (t *Tracker) Lock() { t.mu.Lock() }

// Unlock releases the lock Lock took.
func (t *Tracker) Unlock() { t.mu.Unlock() }

// ProgressOf returns k's Progresser when the bound counts its rollouts: the
// built-in kinds whose status reports progress (Deployment, StatefulSet,
// DaemonSet) and Argo Rollouts; false for any other kind.
func ProgressOf(k workload.Kind) (workload.Progresser, bool) {
	if u, ok := k.(workload.Unstructured); ok && !u.ArgoRollout {
		return nil, false
	}
	p, ok := k.(workload.Progresser)
	return p, ok
}

// Indexer returns the Index function of the kind whose progress p reads:
// "running" for a workload whose rollout Reroll started
// (plan.RolledAtAnnotation) and whose status does not report it complete;
// "pending" for one with a deferred change (plan.PendingAnnotation);
// "waiting" as well when that change waits for a slot
// (plan.DeferMaxConcurrent). Only state Reroll signed under key counts: a
// forged rolled-at or pending (a tenant's, or an older Reroll's) is in no
// index, so it neither fills the bound nor queues ahead of anyone.
func Indexer(p workload.Progresser, key digest.Key) func(client.Object) []string {
	return func(obj client.Object) []string {
		var out []string
		a, uid := obj.GetAnnotations(), string(obj.GetUID())
		if _, ok := plan.RolledAt(key, uid, a); ok && !p.Progress(obj).Done {
			out = append(out, indexRunning)
		}
		if _, ok := plan.Verified(key, uid, plan.PendingAnnotation, a); ok {
			out = append(out, indexPending)
			if plan.PendingReason(key, uid, a) == plan.DeferMaxConcurrent {
				out = append(out, indexWaiting)
			}
		}
		return out
	}
}

// NamespaceBound returns the bound on concurrent rollouts of a namespace
// (plan.Options.NamespaceBound of its annotations); 0 is none.
type NamespaceBound func(ctx context.Context, namespace string) (int, error)

// Count returns the bound's counts for self, whose pending change dates
// from since, read through c (the manager's cache, indexed by Index): the
// running rollouts (cache and in-flight, within their deadlines at now) and
// the older changes waiting for a slot, cluster-wide and in self's
// Namespace. An older change counts as ahead only while its namespace has
// room under its own bound (bound, nil for none): the waiting changes of a
// namespace that holds its whole share are not ahead of another
// namespace's. A pending change that is not Reroll's, or has expired
// (plan.Pending), is never ahead. Self is never counted. The caller holds
// the lock (Lock). An error is one of c's, other than NotFound, or bound's.
func (t *Tracker) Count(ctx context.Context, c client.Reader, self client.Object, since, now time.Time, bound NamespaceBound) (plan.Rollouts, error) {
	var r plan.Rollouts
	seen := map[types.UID]bool{}
	ns := self.GetNamespace()
	running := map[string]int{}
	run := func(namespace string) {
		r.Running++
		running[namespace]++
		if namespace == ns {
			r.RunningInNamespace++
		}
	}
	err := t.each(ctx, c, indexRunning, func(k Kind, obj client.Object) {
		seen[obj.GetUID()] = true
		if obj.GetUID() == self.GetUID() || !t.running(k, obj, now) {
			return
		}
		run(obj.GetNamespace())
	})
	if err != nil {
		return r, err
	}
	for uid, f := range t.inflight {
		if seen[uid] || uid == self.GetUID() {
			continue
		}
		obj := f.kind.New()
		err := c.Get(ctx, f.key, obj)
		if err == nil && obj.GetResourceVersion() != f.before {
			// The cache caught up. It may have done so after the list
			// above, which then missed the rollout: count it from what the
			// cache holds now.
			delete(t.inflight, uid)
			if p, ok := ProgressOf(f.kind); ok && slices.Contains(Indexer(p, t.key)(obj), indexRunning) && t.running(Kind{Kind: f.kind, Progress: p}, obj, now) {
				run(f.key.Namespace)
			}
			continue
		}
		if apierrors.IsNotFound(err) || !now.Before(f.until) {
			// The workload is gone, or the deadline passed.
			delete(t.inflight, uid)
			continue
		}
		if err != nil {
			return r, fmt.Errorf("reading %s %s: %w", f.kind.Name(), f.key, err)
		}
		run(f.key.Namespace)
	}
	self2 := self.GetNamespace() + "/" + self.GetName()
	ahead := map[string]int{}
	err = t.each(ctx, c, indexWaiting, func(_ Kind, obj client.Object) {
		if obj.GetUID() == self.GetUID() {
			return
		}
		other, reason, ok := plan.Pending(t.key, string(obj.GetUID()), obj.GetAnnotations(), now)
		if !ok || reason != plan.DeferMaxConcurrent {
			return
		}
		if other.Before(since) || (other.Equal(since) && obj.GetNamespace()+"/"+obj.GetName() < self2) {
			ahead[obj.GetNamespace()]++
		}
	})
	if err != nil {
		return r, err
	}
	for namespace, n := range ahead {
		if bound != nil {
			b, err := bound(ctx, namespace)
			if err != nil {
				return r, err
			}
			if b > 0 {
				n = min(n, max(b-running[namespace], 0))
			}
		}
		r.Ahead += n
		if namespace == ns {
			r.AheadInNamespace += n
		}
	}
	return r, nil
}

// running reports whether a rollout indexed as running is within its
// deadline.
func (t *Tracker) running(k Kind, obj client.Object, now time.Time) bool {
	at, ok := plan.RolledAt(t.key, string(obj.GetUID()), obj.GetAnnotations())
	return ok && now.Before(at.Add(plan.RolloutDeadline(k.Progress.Progress(obj), t.timeout)))
}

// each calls f for every workload of every counted kind with index value
// v, from the cache without copies (decoded copies of the kinds held in
// compact form: compact.NoCopyFor): f must not change what it is given.
func (t *Tracker) each(ctx context.Context, c client.Reader, v string, f func(Kind, client.Object)) error {
	for _, k := range t.kinds {
		list := k.Kind.NewList()
		if err := c.List(ctx, list, client.MatchingFields{Index: v}, compact.NoCopyFor(list)); err != nil {
			return fmt.Errorf("listing %s by %s: %w", k.Kind.Name(), Index, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				f(k, obj)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// WaitOptIn notes that obj, of kind k, is an opt-in pin (plan.Plan's
// OptInWaits) waiting for a slot: it writes nothing on the workload while
// it waits, so the cache's index does not know it, and WakeOldest wakes it
// from this list, after the changes waiting. A workload noted already
// keeps its place. It needs no lock (it may be called with it).
func (t *Tracker) WaitOptIn(k workload.Kind, obj client.Object) {
	t.optMu.Lock()
	defer t.optMu.Unlock()
	if t.optInSet == nil {
		t.optInSet = map[types.UID]bool{}
	}
	if t.optInSet[obj.GetUID()] {
		return
	}
	t.optInSet[obj.GetUID()] = true
	t.optIns = append(t.optIns, optIn{uid: obj.GetUID(), kind: k, key: client.ObjectKeyFromObject(obj)})
}

// nextOptIns takes up to n of the oldest opt-in pins waiting, off the list.
func (t *Tracker) nextOptIns(n int) []optIn {
	t.optMu.Lock()
	defer t.optMu.Unlock()
	n = min(n, len(t.optIns))
	out := slices.Clone(t.optIns[:n])
	t.optIns = t.optIns[n:]
	for _, o := range out {
		delete(t.optInSet, o.uid)
	}
	return out
}

// WakeOldest asks for a reconcile of the three oldest workloads waiting for
// a slot (oldest pending change first, then by namespace/name; then the
// opt-in pins noted by WaitOptIn, oldest first), through their kind's Wake
// channel without blocking, so that a freed slot is taken at once rather
// than at their next Recheck. It reads c (the cache) only and needs no
// lock (it may be called with it). An error is c's.
func (t *Tracker) WakeOldest(ctx context.Context, c client.Reader) error {
	type waiting struct {
		k     Kind
		key   client.ObjectKey
		since time.Time
	}
	var all []waiting
	now := t.now()
	// Reads the cache only: no need for mu.
	err := t.each(ctx, c, indexWaiting, func(k Kind, obj client.Object) {
		all = append(all, waiting{k, client.ObjectKeyFromObject(obj), plan.PendingSince(t.key, string(obj.GetUID()), obj.GetAnnotations(), now)})
	})
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].since.Equal(all[j].since) {
			return all[i].since.Before(all[j].since)
		}
		return all[i].key.String() < all[j].key.String()
	})
	woken := all[:min(wakeCount, len(all))]
	for _, o := range t.nextOptIns(wakeCount - len(woken)) {
		for _, k := range t.kinds {
			if k.Kind.Name() == o.kind.Name() {
				woken = append(woken, waiting{k: k, key: o.key})
			}
		}
	}
	for _, w := range woken {
		if w.k.Wake == nil {
			continue
		}
		obj := w.k.Kind.New()
		obj.SetNamespace(w.key.Namespace)
		obj.SetName(w.key.Name)
		select {
		case w.k.Wake <- event.GenericEvent{Object: obj}:
		default:
		}
	}
	return nil
}

// Finished is the watch predicate that passes only the update of a workload
// whose rollout, stamped by Reroll (signed under key), the status now
// reports complete (read by p, before and after the update): its reconcile
// frees the slot. It passes no create, delete or generic event.
func Finished(p workload.Progresser, key digest.Key) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if _, ok := plan.RolledAt(key, string(e.ObjectNew.GetUID()), e.ObjectNew.GetAnnotations()); !ok {
				return false
			}
			return !p.Progress(e.ObjectOld).Done && p.Progress(e.ObjectNew).Done
		},
	}
}

// Started notes a rollout of kind k stamped rolledAt (the
// plan.RolledAtAnnotation's signed value the plan wrote) and written over
// obj (as read, before the write, so with the resourceVersion the write was
// guarded by), until the cache shows the write or deadline has passed since
// the stamp. A stamp that does not verify notes nothing. The caller holds
// the lock (Lock).
func (t *Tracker) Started(k workload.Kind, obj client.Object, rolledAt string, deadline time.Duration) {
	// rolledAt is the signed value the plan wrote.
	at, ok := plan.RolledAt(t.key, string(obj.GetUID()), map[string]string{plan.RolledAtAnnotation: rolledAt})
	if !ok {
		return
	}
	t.inflight[obj.GetUID()] = inflight{kind: k, key: client.ObjectKeyFromObject(obj), before: obj.GetResourceVersion(), until: at.Add(deadline)}
}
