package fairness

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Defaults of Options, also those of the flags --namespace-reconcile-rate
// and --namespace-reconcile-burst.
const (
	// DefaultRate is the requests per second one namespace may add to one
	// controller's queue at their own priority, averaged.
	DefaultRate = 10
	// DefaultBurst is how many requests one namespace may add at once at
	// their own priority, after a quiet period: a ConfigMap used by 100
	// workloads of one namespace rolls them all without deferral.
	DefaultBurst = 100
)

// Deferred is the priority of a request added while its namespace was over
// its budget: below controller-runtime's default (0), so every in-budget
// request goes first, and above handler.LowPriority (the initial list at
// start), so a namespace over its budget still goes before the resync of
// unchanged objects.
const Deferred = handler.LowPriority / 2

// sweepEvery is how often, at most, the buckets of quiet namespaces are
// forgotten (on an add; there is no goroutine).
const sweepEvery = time.Minute

// Options are one controller's budgets.
type Options struct {
	// Rate is the requests per second each namespace may add at their own
	// priority, averaged (--namespace-reconcile-rate); 0 means DefaultRate.
	Rate float64
	// Burst is how many requests each namespace may add at once at their
	// own priority (--namespace-reconcile-burst); 0 means DefaultBurst.
	Burst int
	// Off turns the budgets off: every request keeps its priority, first
	// in first out (--namespace-reconcile-rate=0).
	Off bool
}

func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	return o
}

// deferred counts the adds put at Deferred, by controller name. Namespaces
// are not a label: their number is the tenants'.
var deferred = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "reroll_namespace_deferred_total",
	Help: "Requests added to a controller's queue while their namespace was over its budget (--namespace-reconcile-rate, --namespace-reconcile-burst), and so queued behind every other namespace's, by controller.",
}, []string{"controller"})

func init() {
	ctrlmetrics.Registry.MustRegister(deferred)
}

// Budgets holds one token bucket per namespace. Its methods may be called
// concurrently.
type Budgets struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// NewBudgets returns the budgets of opts (zero fields mean the defaults);
// now is the clock (time.Now in production).
func NewBudgets(opts Options, now func() time.Time) *Budgets {
	opts = opts.withDefaults()
	return &Budgets{limit: rate.Limit(opts.Rate), burst: opts.Burst, now: now, buckets: map[string]*rate.Limiter{}, swept: now()}
}

// Take takes one token from namespace's bucket and reports whether there
// was one. A bucket that is empty stays empty (no debt): a namespace that
// stops flooding is back in budget after 1/Rate seconds.
func (b *Budgets) Take(namespace string) bool {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.swept) >= sweepEvery {
		b.sweep(now)
	}
	l, ok := b.buckets[namespace]
	if !ok {
		l = rate.NewLimiter(b.limit, b.burst)
		b.buckets[namespace] = l
	}
	return l.AllowN(now, 1)
}

// sweep forgets the buckets that are full again: a new bucket would be the
// same. b.mu is held.
func (b *Budgets) sweep(now time.Time) {
	for ns, l := range b.buckets {
		if l.TokensAt(now) >= float64(b.burst) {
			delete(b.buckets, ns)
		}
	}
	b.swept = now
}

// Len is how many namespaces have a bucket (for tests and the docs' claim
// that memory is bounded).
func (b *Budgets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buckets)
}

// Priority is the priority at which a request of namespace, added with
// priority p, is queued: p while the namespace has a token, else the lower
// of p and Deferred. A request re-added by its controller after a
// reconcile comes back with the priority it was handed out with; Deferred
// is then read as the default priority, so that a namespace back in budget
// gets its own priority back. Requests already below Deferred (the initial
// list) take no token: they wait behind everything anyway.
func (b *Budgets) Priority(namespace string, p int) int {
	if p == Deferred {
		p = 0
	}
	if p < Deferred || b.Take(namespace) {
		return p
	}
	return Deferred
}

// Queue is a controller-runtime priority queue whose adds are queued at
// the priority their namespace's budget allows (Budgets.Priority).
type Queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	budgets *Budgets
	// deferred counts this controller's deferred adds.
	deferred prometheus.Counter
}

// NewQueue returns the constructor of a controller's queue for
// controller.Options.NewQueue: controller-runtime's priority queue (with
// the rate limiter controller-runtime passes, for retries), behind the
// budgets of opts. With opts.Off it returns nil, which controller-runtime
// reads as its own default queue. log receives the queue's own logs.
func NewQueue(opts Options, log logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if opts.Off {
		return nil
	}
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		inner := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
			o.Log = log.WithValues("controller", name)
			o.RateLimiter = limiter
		})
		return &Queue{PriorityQueue: inner, budgets: NewBudgets(opts, time.Now), deferred: deferred.WithLabelValues(name)}
	}
}

// Add queues item at the default priority, as its namespace's budget allows.
func (q *Queue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

// AddAfter queues item after d, as its namespace's budget allows.
func (q *Queue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

// AddRateLimited queues item after its retry back-off, as its namespace's
// budget allows.
func (q *Queue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts queues items as o says, each at the priority its namespace's
// budget allows.
func (q *Queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		p := q.budgets.Priority(item.Namespace, ptr.Deref(o.Priority, 0))
		if p == Deferred {
			q.deferred.Inc()
		}
		one := o
		one.Priority = ptr.To(p)
		q.PriorityQueue.AddWithOpts(one, item)
	}
}
