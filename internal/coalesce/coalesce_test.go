package coalesce

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestDueTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		// first and now are the seconds after t0 of the burst's first change
		// and of the latest one.
		first, now int
		// window and maxWait are in seconds.
		window, maxWait int
		// want is the due time, in seconds after t0.
		want int
	}{
		"a single change waits one window":              {first: 0, now: 0, window: 1, maxWait: 10, want: 1},
		"a later change restarts the window":            {first: 0, now: 4, window: 1, maxWait: 10, want: 5},
		"the wait never passes max-wait from the first": {first: 0, now: 9, window: 2, maxWait: 10, want: 10},
		"a change after max-wait is due at max-wait":    {first: 0, now: 12, window: 2, maxWait: 10, want: 10},
		"max-wait equal to the window never extends":    {first: 0, now: 1, window: 2, maxWait: 2, want: 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
			got := dueTime(t0.Add(sec(c.first)), t0.Add(sec(c.now)), sec(c.window), sec(c.maxWait))
			if want := t0.Add(sec(c.want)); !got.Equal(want) {
				t.Errorf("dueTime = %s after the first change, want %s", got.Sub(t0), want.Sub(t0))
			}
		})
	}
}

// TestDebouncer_BurstIsAddedOnceWhenQuietOrAtMaxWait drives the debouncer
// with a fake clock: changes closer together than the window extend the
// wait; the request is added once, when the changes stop or at max-wait.
func TestDebouncer_BurstIsAddedOnceWhenQuietOrAtMaxWait(t *testing.T) {
	g := gomega.NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := New(Options{Window: time.Second, MaxWait: 5 * time.Second, Clock: clk})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}

	// a: three changes 0.8 s apart, then quiet: added 1 s after the last.
	d.touch(a, q)
	for range 2 {
		clk.Step(800 * time.Millisecond)
		d.touch(a, q)
	}
	clk.Step(999 * time.Millisecond)
	g.Expect(q.Len()).To(gomega.Equal(0), "added before the burst was quiet for the window")
	clk.Step(time.Millisecond)
	g.Eventually(q.Len).Should(gomega.Equal(1))
	g.Expect(d.waiting()).To(gomega.Equal(0))
	got, _ := q.Get()
	g.Expect(got).To(gomega.Equal(a))
	q.Done(got)

	// b: a change every 0.5 s that never stops: added at max-wait.
	start := clk.Now()
	for clk.Since(start) < 5*time.Second {
		d.touch(b, q)
		clk.Step(500 * time.Millisecond)
	}
	g.Eventually(q.Len).Should(gomega.Equal(1))
	got, _ = q.Get()
	g.Expect(got).To(gomega.Equal(b))
	q.Done(got)
	// A change after the burst starts a new one.
	d.touch(b, q)
	g.Expect(d.waiting()).To(gomega.Equal(1))
	clk.Step(time.Second)
	g.Eventually(q.Len).Should(gomega.Equal(1))
}

// The third review (Low): an entry of the cooling map went only when its
// workload was reconciled again after its window, so workloads rolled once
// and then deleted (or never reconciled again) stayed in it for good.
func TestDebouncer_CoolingMapIsBounded(t *testing.T) {
	g := gomega.NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := New(Options{Window: time.Second, MaxWait: time.Second, Clock: clk})
	cool := func(i int) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w" + itoa(i)}}
		d.mu.Lock()
		d.fired[req] = true
		d.mu.Unlock()
		g.Expect(d.Admit(req).Run).To(gomega.BeTrue())
	}
	for i := range 10 * coolingSweep {
		cool(i)
		if i%100 == 99 {
			// Each workload is gone after its reconcile; time passes.
			clk.Step(2 * time.Second)
		}
	}
	g.Expect(d.cooled()).To(gomega.BeNumerically("<=", coolingSweep+100), "only entries inside their window, and one sweep's worth, remain")
	// Positive control: entries inside their window are kept.
	for i := range 50 {
		cool(100000 + i)
	}
	g.Expect(d.cooled()).To(gomega.BeNumerically(">=", 50))
}

func itoa(i int) string { return strconv.Itoa(i) }

// countingClock counts the timers set on a fake clock.
type countingClock struct {
	*clocktesting.FakeClock
	timers atomic.Int32
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.timers.Add(1)
	return c.FakeClock.AfterFunc(d, f)
}

// Issue #36: a ConfigMap read by 2,000 workloads made 2,000 timers fire at
// the same instant, each on a goroutine of its own (time.AfterFunc), ~14
// MiB of stacks at once on the fan-out profile's peak RSS.
func TestDebouncer_RequestsDueTogetherShareOneTimer(t *testing.T) {
	g := gomega.NewWithT(t)
	clk := &countingClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	d := New(Options{Window: time.Second, MaxWait: 5 * time.Second, Clock: clk})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	const n = 2000
	for i := range n {
		d.touch(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w" + itoa(i)}}, q)
	}
	g.Expect(d.waiting()).To(gomega.Equal(n))
	g.Expect(clk.timers.Load()).To(gomega.BeEquivalentTo(1), "one timer for the 2,000 requests due at once")

	clk.Step(999 * time.Millisecond)
	g.Consistently(q.Len, 50*time.Millisecond).Should(gomega.Equal(0), "added before the window passed")
	clk.Step(time.Millisecond)
	g.Eventually(q.Len).Should(gomega.Equal(n), "every request added when the window passed")
	g.Expect(d.waiting()).To(gomega.Equal(0))
	g.Expect(clk.timers.Load()).To(gomega.BeEquivalentTo(1), "no timer set once nothing waits")

	// A request whose due time moved waits on, and the timer is set again
	// for it alone.
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}
	d.touch(a, q)
	d.touch(b, q)
	clk.Step(600 * time.Millisecond)
	d.touch(a, q) // a is now due 1.6 s after the start, b at 1 s
	clk.Step(400 * time.Millisecond)
	g.Eventually(q.Len).Should(gomega.Equal(n + 1))
	g.Expect(d.Holds(a)).To(gomega.BeTrue(), "a's due time moved: still held")
	g.Expect(d.Holds(b)).To(gomega.BeFalse())
	clk.Step(600 * time.Millisecond)
	g.Eventually(q.Len).Should(gomega.Equal(n + 2))
	g.Expect(d.waiting()).To(gomega.Equal(0))
}

// recordingQueue records when each request was added, on the fake clock.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	clk *clocktesting.FakeClock

	mu    sync.Mutex
	added map[reconcile.Request][]time.Time
	n     int
}

func (q *recordingQueue) Add(req reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.added[req] = append(q.added[req], q.clk.Now())
	q.n++
}

func (q *recordingQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// The debouncer's timers against a model of its rule (dueTime per burst):
// 300 requests touched at random instants, and 2,000 more at one instant (a
// ConfigMap read by 2,000 workloads), each added exactly once per burst, at
// its own due time: window after the burst's last change, never later than
// max-wait after its first. The clock moves on a 100 ms grid; at each
// instant the timers fire first, then the changes of that instant are seen.
func TestDebouncer_EachRequestIsAddedAtItsOwnDueTime(t *testing.T) {
	g := gomega.NewWithT(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	const window, maxWait, step = time.Second, 3 * time.Second, 100 * time.Millisecond
	d := New(Options{Window: window, MaxWait: maxWait, Clock: clk})
	inner := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(inner.ShutDown)
	q := &recordingQueue{TypedRateLimitingInterface: inner, clk: clk, added: map[reconcile.Request][]time.Time{}}

	// touches[i] are the requests changed at the grid's i-th instant.
	const instants = 100
	touches := make([][]reconcile.Request, instants)
	rnd := rand.New(rand.NewPCG(36, 1))
	for i := range 300 {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r" + itoa(i)}}
		for range 1 + rnd.IntN(12) {
			at := rnd.IntN(instants)
			touches[at] = append(touches[at], req)
		}
	}
	for i := range 2000 {
		touches[20] = append(touches[20], reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "fan", Name: "w" + itoa(i)}})
	}

	// The model: the open burst of each request, and the adds it expects.
	type burst struct{ first, due time.Time }
	open := map[reconcile.Request]burst{}
	want := map[reconcile.Request][]time.Time{}
	wantN := 0
	for i := 0; i < instants || len(open) > 0; i++ {
		now := t0.Add(time.Duration(i) * step)
		if i > 0 {
			clk.SetTime(now)
		}
		for req, b := range open {
			if !b.due.After(now) {
				want[req] = append(want[req], b.due)
				wantN++
				delete(open, req)
			}
		}
		g.Eventually(q.count).Should(gomega.Equal(wantN), "adds by %s", now.Sub(t0))
		if i < instants {
			for _, req := range touches[i] {
				b, ok := open[req]
				if !ok {
					b.first = now
				}
				b.due = dueTime(b.first, now, window, maxWait)
				open[req] = b
				d.touch(req, q)
			}
		}
	}
	g.Consistently(q.count, 50*time.Millisecond).Should(gomega.Equal(wantN), "no add after the last due time")
	g.Expect(d.waiting()).To(gomega.Equal(0))
	q.mu.Lock()
	defer q.mu.Unlock()
	g.Expect(q.added).To(gomega.Equal(want), "each request added once per burst, at its due time")
	g.Expect(len(q.added)).To(gomega.Equal(2300), "positive control: every request was added")
}
