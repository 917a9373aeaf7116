package idlegc

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NewQueueFunc is the type of controller.Options.NewQueue for Reroll's
// controllers: it makes a controller's workqueue, by controller name and
// retry rate limiter.
type NewQueueFunc = func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]

// FirstPass tells when the controllers' start-up work is done: when the
// queue of every controller it was given (Queue) has, once its workers
// started, held no ready request and no request in a worker. Workers start
// only after their sources have queued the whole initial list, so that
// moment follows the reconcile of every object cached at start (the first
// sight of every workload) and of everything those reconciles queued at
// once; requests queued for later (a coalescing window, a back-off) are
// not start-up work. A controller that never starts (a replica that does
// not lead) keeps Done open. The zero value is not usable: use
// NewFirstPass.
type FirstPass struct {
	mu sync.Mutex
	// pending counts the controllers given (Queue) whose queue has not yet
	// drained.
	pending int
	done    chan struct{}
}

// NewFirstPass returns a FirstPass that waits for no controller yet.
func NewFirstPass() *FirstPass {
	return &FirstPass{done: make(chan struct{})}
}

// Done is closed once every controller given to Queue before its close
// has drained its queue once.
func (p *FirstPass) Done() <-chan struct{} { return p.done }

// Queue returns newQueue (controller-runtime's priority queue when nil,
// as controller-runtime makes it by default) for one controller's
// controller.Options.NewQueue, and counts that controller: its queue
// reports to p when it first drains. Call it once per controller, before
// the manager starts. A queue that is not a priority queue is counted as
// drained when made.
func (p *FirstPass) Queue(newQueue NewQueueFunc) NewQueueFunc {
	if newQueue == nil {
		newQueue = func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = limiter })
		}
	}
	p.mu.Lock()
	p.pending++
	p.mu.Unlock()
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := newQueue(name, limiter)
		pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
		if !ok {
			p.drained()
			return q
		}
		return &passQueue{PriorityQueue: pq, pass: p}
	}
}

// drained counts one controller's queue as drained, and closes done with
// the last.
func (p *FirstPass) drained() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending--
	if p.pending == 0 {
		close(p.done)
	}
}

// passQueue is a controller's queue that reports to pass the first time,
// after its first Get, it holds no ready request and its workers none.
type passQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	pass *FirstPass
	// working counts the requests handed to workers and not yet Done.
	working atomic.Int64
	// reported is set once the queue has reported to pass.
	reported atomic.Bool
}

// GetWithPriority hands the next ready request to a worker (the call
// controller-runtime's workers make), blocking while there is none; a
// first call on a queue with nothing to do reports the queue drained.
func (q *passQueue) GetWithPriority() (reconcile.Request, int, bool) {
	q.check()
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.working.Add(1)
	}
	return item, priority, shutdown
}

// Get is GetWithPriority without the priority.
func (q *passQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// Done marks item's reconcile finished; the last one of the first pass
// reports the queue drained.
func (q *passQueue) Done(item reconcile.Request) {
	q.PriorityQueue.Done(item)
	q.working.Add(-1)
	q.check()
}

// check reports the queue drained, once, when no request is ready and none
// is in a worker. A worker between taking a request and counting it can be
// missed: the report then comes with that one reconcile still to run.
func (q *passQueue) check() {
	if q.reported.Load() || q.working.Load() > 0 || q.PriorityQueue.Len() > 0 {
		return
	}
	if q.reported.CompareAndSwap(false, true) {
		q.pass.drained()
	}
}
