package idlegc

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// request returns the request of the workload named name.
func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

// closed reports whether done is closed, after waiting up to wait.
func closed(done <-chan struct{}, wait time.Duration) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// newQueue makes one controller's queue through p, as controller-runtime
// does when the controller starts.
func newQueue(p *FirstPass, newQueue NewQueueFunc) priorityqueue.PriorityQueue[reconcile.Request] {
	q := p.Queue(newQueue)("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	return q.(priorityqueue.PriorityQueue[reconcile.Request])
}

func TestFirstPass_DoneOnceEveryQueuedRequestIsReconciled(t *testing.T) {
	g := gomega.NewWithT(t)
	p := NewFirstPass()
	q := newQueue(p, nil)
	defer q.ShutDown()
	// The initial list, queued before the workers start.
	q.AddWithOpts(priorityqueue.AddOpts{Priority: new(int)}, request("a"), request("b"))
	// Work for later (a coalescing window) is not start-up work.
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour}, request("later"))

	a, _, _ := q.GetWithPriority()
	g.Expect(closed(p.Done(), 0)).To(gomega.BeFalse(), "one request is still queued")
	b, _, _ := q.GetWithPriority()
	g.Expect(closed(p.Done(), 20*time.Millisecond)).To(gomega.BeFalse(), "none is queued, but two are in workers")
	q.Done(a)
	g.Expect(closed(p.Done(), 20*time.Millisecond)).To(gomega.BeFalse(), "one is still in a worker")
	q.Done(b)
	g.Expect(closed(p.Done(), time.Second)).To(gomega.BeTrue(), "every request of the start is reconciled")

	// Later drains change nothing (Done stays closed, nothing panics).
	q.Add(request("c"))
	c, _, _ := q.GetWithPriority()
	q.Done(c)
	g.Expect(closed(p.Done(), 0)).To(gomega.BeTrue())
}

func TestFirstPass_AQueueWithNothingToDoAtItsStartIsDrained(t *testing.T) {
	g := gomega.NewWithT(t)
	p := NewFirstPass()
	q := newQueue(p, nil)
	g.Expect(closed(p.Done(), 20*time.Millisecond)).To(gomega.BeFalse(), "the controller has not started")
	got := make(chan bool, 1)
	go func() {
		_, _, shutdown := q.GetWithPriority() // blocks: nothing to do
		got <- shutdown
	}()
	g.Expect(closed(p.Done(), time.Second)).To(gomega.BeTrue(), "the first worker found nothing to do")
	q.ShutDown()
	g.Eventually(got).Should(gomega.Receive(gomega.BeTrue()))
}

func TestFirstPass_WaitsForEveryController(t *testing.T) {
	g := gomega.NewWithT(t)
	p := NewFirstPass()
	first := newQueue(p, nil)
	defer first.ShutDown()
	// The second controller's queue comes from its own constructor (the
	// fair queue, in Reroll); it is made only when the controller starts.
	made := 0
	second := p.Queue(func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		made++
		return priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = limiter })
	})

	first.Add(request("a"))
	a, _, _ := first.GetWithPriority()
	first.Done(a)
	g.Expect(closed(p.Done(), 20*time.Millisecond)).To(gomega.BeFalse(), "the second controller has not started")

	q := second("second", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()).(priorityqueue.PriorityQueue[reconcile.Request])
	defer q.ShutDown()
	g.Expect(made).To(gomega.Equal(1))
	q.Add(request("b"))
	b, _, _ := q.GetWithPriority()
	g.Expect(closed(p.Done(), 20*time.Millisecond)).To(gomega.BeFalse(), "the second controller's request is in a worker")
	q.Done(b)
	g.Expect(closed(p.Done(), time.Second)).To(gomega.BeTrue())
}

func TestFirstPass_AQueueThatIsNotAPriorityQueueDoesNotHoldItBack(t *testing.T) {
	g := gomega.NewWithT(t)
	p := NewFirstPass()
	mk := p.Queue(func(_ string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueue(limiter)
	})
	g.Expect(closed(p.Done(), 0)).To(gomega.BeFalse(), "a counted controller has not started")
	q := mk("plain", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	g.Expect(closed(p.Done(), 0)).To(gomega.BeTrue())
}
