package fairness

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// clock is a settable clock for Budgets.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func request(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func TestBudgets_Priority(t *testing.T) {
	cases := map[string]struct {
		// taken is how many tokens the namespace took just before.
		taken int
		// wait is how long after those the request is added.
		wait time.Duration
		// in is the priority the request is added with.
		in int
		// want is the priority it is queued at.
		want int
	}{
		"a namespace within its burst keeps the default priority": {
			taken: 4, in: 0, want: 0,
		},
		"a namespace past its burst is deferred": {
			taken: 5, in: 0, want: Deferred,
		},
		"a namespace past its burst that waited one token's time is back in budget": {
			taken: 5, wait: 500 * time.Millisecond, in: 0, want: 0,
		},
		"a request re-added at Deferred gets the default priority back once in budget": {
			taken: 0, in: Deferred, want: 0,
		},
		"a request re-added at Deferred stays deferred while over budget": {
			taken: 5, in: Deferred, want: Deferred,
		},
		"a raised priority is kept while in budget": {
			taken: 0, in: 10, want: 10,
		},
		"a raised priority is deferred too when over budget": {
			taken: 5, in: 10, want: Deferred,
		},
		"the initial list keeps its low priority and takes no token": {
			taken: 5, in: handler.LowPriority, want: handler.LowPriority,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			b := NewBudgets(Options{Rate: 2, Burst: 5}, clk.now)
			for range c.taken {
				b.Take("a")
			}
			clk.t = clk.t.Add(c.wait)
			if got := b.Priority("a", c.in); got != c.want {
				t.Errorf("Priority = %d, want %d", got, c.want)
			}
		})
	}
}

func TestBudgets_OneNamespaceOverBudgetLeavesOthersInBudget(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	b := NewBudgets(Options{Rate: 1, Burst: 3}, clk.now)
	for i := range 3 {
		if !b.Take("a") {
			t.Fatalf("token %d of a's burst was refused", i+1)
		}
	}
	if b.Take("a") {
		t.Fatal("a took a fourth token within its burst of 3")
	}
	if !b.Take("b") {
		t.Error("b was refused a token because a is over budget")
	}
}

func TestBudgets_ForgetsNamespacesThatWentQuiet(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	b := NewBudgets(Options{Rate: 10, Burst: 20}, clk.now)
	for i := range 1000 {
		b.Take(fmt.Sprintf("quiet-%d", i))
	}
	for range 30 {
		b.Take("busy")
	}
	// Positive control: every namespace seen has a bucket.
	if got := b.Len(); got != 1001 {
		t.Fatalf("Len = %d before the sweep, want 1001", got)
	}
	// A minute later the quiet ones are full again (1 token used, 10 per
	// second); busy keeps flooding and is kept.
	clk.t = clk.t.Add(sweepEvery - time.Second)
	for range 30 {
		b.Take("busy")
	}
	clk.t = clk.t.Add(time.Second)
	b.Take("busy")
	if got := b.Len(); got != 1 {
		t.Errorf("Len = %d after the sweep, want 1 (busy only)", got)
	}
}

// drain hands out every ready item of q in order, marking each done.
func drain(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], n int) []reconcile.Request {
	t.Helper()
	out := make([]reconcile.Request, 0, n)
	got := make(chan reconcile.Request)
	go func() {
		for range n {
			item, shutdown := q.Get()
			if shutdown {
				close(got)
				return
			}
			got <- item
			q.Done(item)
		}
		close(got)
	}()
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case item, ok := <-got:
			if !ok {
				t.Fatalf("the queue shut down after %d items", len(out))
			}
			out = append(out, item)
		case <-timeout:
			t.Fatalf("only %d of %d items were handed out", len(out), n)
		}
	}
	return out
}

// position is the index of want in got, or -1.
func position(got []reconcile.Request, want reconcile.Request) int {
	for i, r := range got {
		if r == want {
			return i
		}
	}
	return -1
}

func TestQueue_AnotherNamespacesRequestGoesBeforeAFloodsBacklog(t *testing.T) {
	const flood = 300
	newQueue := NewQueue(Options{Rate: 1, Burst: 10}, logr.Discard())
	q := newQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Fatal("the queue is not a priorityqueue.PriorityQueue: controller-runtime's handlers would not set priorities")
	}
	for i := range flood {
		q.Add(request("flood", fmt.Sprintf("w%d", i)))
	}
	quiet := request("quiet", "web")
	q.Add(quiet)
	got := drain(t, q, flood+1)
	// Positive control: the flood is handed out too, nothing is dropped.
	if position(got, request("flood", fmt.Sprintf("w%d", flood-1))) < 0 {
		t.Fatal("the flood's last request was never handed out")
	}
	// The quiet namespace's request comes right after the flood's burst.
	if at := position(got, quiet); at < 0 || at > 10 {
		t.Errorf("the quiet namespace's request was handed out at position %d, want at most 10 (after the flood's burst)", at)
	}
}

func TestQueue_OffIsFirstInFirstOut(t *testing.T) {
	// The negative control of the test above: without budgets, the quiet
	// namespace waits behind the whole flood. controller-runtime's default
	// queue is the priority queue, built here as it builds it.
	if NewQueue(Options{Off: true}, logr.Discard()) != nil {
		t.Fatal("NewQueue with Off returned a constructor; controller-runtime's default queue is wanted")
	}
	const flood = 300
	q := priorityqueue.New[reconcile.Request]("test-off")
	defer q.ShutDown()
	for i := range flood {
		q.Add(request("flood", fmt.Sprintf("w%d", i)))
	}
	quiet := request("quiet", "web")
	q.Add(quiet)
	got := drain(t, q, flood+1)
	if at := position(got, quiet); at != flood {
		t.Errorf("without budgets the quiet request was handed out at position %d, want %d (last)", at, flood)
	}
}

func TestQueue_DeferredRequestsStillRunWhenNothingElseIsReady(t *testing.T) {
	q := NewQueue(Options{Rate: 0.001, Burst: 1}, logr.Discard())("test-idle", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	q.Add(request("a", "one"))
	q.Add(request("a", "two")) // over budget: deferred
	got := drain(t, q, 2)
	if got[0] != request("a", "one") || got[1] != request("a", "two") {
		t.Errorf("handed out %v, want one then two", got)
	}
}
