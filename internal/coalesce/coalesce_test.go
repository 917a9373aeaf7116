package coalesce

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
