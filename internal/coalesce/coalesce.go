package coalesce

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultWindow is the default of Options.Window (--coalesce-window): long enough to hold a `kubectl apply` or a Helm
// upgrade that changes a workload's ConfigMaps and Secrets one request after
// another, short next to the seconds a rollout itself takes.
const DefaultWindow = 500 * time.Millisecond

// DefaultMaxWait is the default of Options.MaxWait (--coalesce-max-wait): the longest a workload waits for a burst of changes
// to end before it is reconciled anyway.
const DefaultMaxWait = 10 * time.Second

// Options say how ConfigMap and Secret changes are held back before the
// workloads that consume them are reconciled.
type Options struct {
	// Window is the quiet time, after the latest change to any object a
	// workload consumes, before the workload is reconciled. 0 reconciles at
	// once.
	Window time.Duration
	// MaxWait bounds the wait from the first change of a burst: a workload
	// whose objects keep changing is reconciled MaxWait after the first
	// change even if the burst goes on. A MaxWait below Window is taken as
	// Window (the window then never extends).
	MaxWait time.Duration
	// Clock is the clock of the timers; nil means the real clock. Tests
	// set a fake one.
	Clock clock.WithDelayedExecution
}

// Handler is the event handler of the ConfigMap and Secret watches:
// it maps an event to the workloads that consume the object, as
// handler.EnqueueRequestsFromMapFunc does, but adds each workload to the
// queue only once its objects have been quiet for c.Window (a debounce):
// each further change to any object it consumes restarts the wait, up to
// c.MaxWait after the first change. A burst of any length (a GitOps sync or
// a rotation writing a workload's ConfigMap and Secret seconds apart) is then
// seen by a single Reconcile, which rolls the workload once, and no workload
// waits longer than MaxWait. The price is up to Window of extra latency per
// rollout (MaxWait under a constant stream of changes).
//
// The wait is held in memory only, on purpose: Reconcile is level-triggered,
// and a restarted Reroll reconciles every workload from its record, so a
// wait lost to a restart loses no change.
//
// Creates from an informer's initial list are dropped: every workload is
// enqueued by its own watch's initial list, and controller-runtime starts
// no worker before all of a controller's watches have synced, so those
// creates would only repeat an index lookup per object at start-up.
//
// Every watch of one workload kind must share one debouncer, so that a
// ConfigMap change and a Secret change extend the same wait.
func Handler(d *Debouncer, toRequests handler.MapFunc) handler.EventHandler {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range toRequests(ctx, obj) {
			if d.window > 0 {
				d.touch(req, q)
			} else {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				return
			}
			enqueue(ctx, e.Object, q)
		},
		// A ConfigMap's or Secret's name never changes, so the new object
		// maps to the same workloads as the old one.
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// changeSeer is a queue that records when a change for a request was seen
// (the controller's seenQueue, for reroll_change_to_rollout_seconds); the
// debouncer tells it at the change, not when the request is finally added.
type changeSeer interface {
	Seen(reconcile.Request)
}

// Debouncer holds requests back until their objects are quiet; see
// Handler. It is safe for concurrent use by the informers' handlers.
type Debouncer struct {
	window, maxWait time.Duration
	clock           clock.WithDelayedExecution

	mu      sync.Mutex
	pending map[reconcile.Request]*held
	// due orders the pending requests by the due time known when each was
	// pushed (a later change moves a request's due time without moving it
	// here: fire pushes it again), so it holds one entry per pending
	// request. One timer, set for the earliest, fires them all: a
	// ConfigMap read by 2,000 workloads holds 2,000 requests that come due
	// at once, and a timer each (time.AfterFunc starts a goroutine per
	// timer that fires) ran up to ~1,700 goroutines at that moment, whose
	// stacks raised the fan-out profile's peak RSS and whose goroutine
	// structures Go never frees (issue #36).
	due dueHeap
	// timer is the timer set, nil when none is; timerAt is when it fires.
	timer   clock.Timer
	timerAt time.Time
	// fired holds the requests the debouncer added and whose reconcile has
	// not started; cooling, for those whose reconcile started, until when
	// other reconciles wait (see Admit).
	fired   map[reconcile.Request]bool
	cooling map[reconcile.Request]time.Time
}

// held is one request waiting for its objects to be quiet.
type held struct {
	// first is when the burst's first change was seen; due is when the
	// request is added unless a further change moves it.
	first, due time.Time
	// q is the queue to add the request to.
	q workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// New returns a Debouncer that holds requests as c says.
func New(c Options) *Debouncer {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	maxWait := c.MaxWait
	if maxWait < c.Window {
		maxWait = c.Window
	}
	return &Debouncer{window: c.Window, maxWait: maxWait, clock: clk, pending: map[reconcile.Request]*held{},
		fired: map[reconcile.Request]bool{}, cooling: map[reconcile.Request]time.Time{}}
}

// dueTime is when a request whose burst began at first, and whose latest
// change was seen at now, is added to the queue: window after the latest
// change, but never later than maxWait after the first.
func dueTime(first, now time.Time, window, maxWait time.Duration) time.Time {
	due := now.Add(window)
	if limit := first.Add(maxWait); due.After(limit) {
		return limit
	}
	return due
}

// touch records a change for req: it starts a burst, or moves the burst's
// due time.
func (d *Debouncer) touch(req reconcile.Request, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if s, ok := q.(changeSeer); ok {
		s.Seen(req)
	}
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.pending[req]; h != nil {
		h.due = dueTime(h.first, now, d.window, d.maxWait)
		h.q = q
		return
	}
	h := &held{first: now, due: dueTime(now, now, d.window, d.maxWait), q: q}
	d.pending[req] = h
	heap.Push(&d.due, dueEntry{req: req, at: h.due})
	d.arm(now)
}

// arm sets the timer for the earliest due time, unless the timer set
// already fires by then; it holds mu. A timer set for a later time is
// stopped. A timer that fires finds less or nothing to do when a stop came
// too late, and fire sets the timer again for what is left.
func (d *Debouncer) arm(now time.Time) {
	if len(d.due) == 0 {
		return
	}
	next := d.due[0].at
	if d.timer != nil && !next.Before(d.timerAt) {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timerAt = next
	// A fake clock runs its callbacks while holding its lock, which Now
	// takes: fire runs on a goroutine of its own.
	d.timer = d.clock.AfterFunc(next.Sub(now), func() { go d.fire() })
}

// fire adds each request whose due time has come to its queue, pushes
// again those whose due time a change moved, and sets the timer for the
// next.
func (d *Debouncer) fire() {
	type add struct {
		q   workqueue.TypedRateLimitingInterface[reconcile.Request]
		req reconcile.Request
	}
	var adds []add
	d.mu.Lock()
	now := d.clock.Now()
	// Whichever timer this is, arm below sets one for what is left.
	d.timer = nil
	for len(d.due) > 0 && !d.due[0].at.After(now) {
		e := heap.Pop(&d.due).(dueEntry)
		h := d.pending[e.req]
		if h == nil {
			continue
		}
		if h.due.After(now) {
			heap.Push(&d.due, dueEntry{req: e.req, at: h.due})
			continue
		}
		delete(d.pending, e.req)
		d.fired[e.req] = true
		adds = append(adds, add{q: h.q, req: e.req})
	}
	if len(d.pending) == 0 {
		// Go keeps a map's and a slice's room after their entries go:
		// after a fan-out, 2,000 entries' worth of each.
		d.pending = map[reconcile.Request]*held{}
		d.due = nil
	}
	d.arm(now)
	d.mu.Unlock()
	for _, a := range adds {
		a.q.Add(a.req)
	}
}

// dueEntry is one pending request in the due heap, at the due time known
// when it was pushed.
type dueEntry struct {
	req reconcile.Request
	at  time.Time
}

// dueHeap is a container/heap of dueEntry, earliest first.
type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueEntry{}
	*h = old[:len(old)-1]
	return e
}

// Admission is the debouncer's answer to a reconcile of one request.
type Admission struct {
	// Run is true when the reconcile may run now; Wait, when not, is when
	// to try again (0: the debouncer adds the request itself).
	Run  bool
	Wait time.Duration
	// Ended is true for the reconcile the debouncer started itself: the
	// burst it held is over (quiet for the window, or cut at max-wait), so
	// the reconcile answers it now rather than hold it again.
	Ended bool
}

// Admit says whether a reconcile of req may run now. A request held for a
// burst waits for the debouncer. The reconcile the debouncer started runs
// (Ended), and for a window after it starts, other reconciles of req wait:
// the informer's store holds a write before its handler has told the
// debouncer, so the reconcile of the workload's own update (most often the
// rollout just written) would find the burst's next write before its burst
// is held. A nil debouncer admits everything.
func (d *Debouncer) Admit(req reconcile.Request) Admission {
	if d == nil {
		return Admission{Run: true}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.pending[req]; ok {
		return Admission{}
	}
	now := d.clock.Now()
	if d.fired[req] {
		delete(d.fired, req)
		if len(d.fired) == 0 {
			// Its room, as for pending in fire.
			d.fired = map[reconcile.Request]bool{}
		}
		if len(d.cooling) >= coolingSweep {
			d.sweep(now)
		}
		d.cooling[req] = now.Add(d.window)
		return Admission{Run: true, Ended: true}
	}
	if until, ok := d.cooling[req]; ok {
		if now.Before(until) {
			return Admission{Wait: until.Sub(now)}
		}
		delete(d.cooling, req)
	}
	return Admission{Run: true}
}

// coolingSweep is the size of the cooling map at which its expired entries
// are dropped: an entry goes when its workload is reconciled again after
// its window, and a workload deleted meanwhile never is, so without the
// sweep the map would grow with every workload ever rolled.
const coolingSweep = 1024

// sweep drops the cooling entries that have expired at now; it holds mu.
// Only entries inside their window remain, so the map holds at most the
// workloads whose reconcile started within one window, and at least
// coolingSweep more are added before the next sweep (amortised O(1)).
//
// The entries left are copied to a new map: Go keeps a map's room after
// its entries are deleted, and the one a fan-out filled would stay.
func (d *Debouncer) sweep(now time.Time) {
	kept := map[reconcile.Request]time.Time{}
	for req, until := range d.cooling {
		if now.Before(until) {
			kept[req] = until
		}
	}
	d.cooling = kept
}

// cooled returns how many requests wait in the cooling map; for tests.
func (d *Debouncer) cooled() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cooling)
}

// Holds reports whether req is held: a change to one of its objects is
// still inside its window. A nil debouncer holds nothing.
func (d *Debouncer) Holds(req reconcile.Request) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending[req] != nil
}

// waiting returns how many requests are held; for tests.
func (d *Debouncer) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}
