package idlegc

import (
	"context"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestPacer_Next_IdleAfterQuietSamplesBusyAtOnce(t *testing.T) {
	p := Pacer{Busy: 100, Idle: 25, QuietRate: 1000, QuietSamples: 3, Interval: time.Second}
	for name, tc := range map[string]struct {
		// from is the state before the sample.
		from State
		// allocated is the sample's bytes allocated, over elapsed.
		allocated uint64
		elapsed   time.Duration
		// want is the state after it; changed whether the target changes.
		want    State
		changed bool
	}{
		"a first quiet sample counts, the target stays": {
			from: State{}, allocated: 999, elapsed: time.Second,
			want: State{Quiet: 1},
		},
		"the third quiet sample in a row makes the process idle": {
			from: State{Quiet: 2}, allocated: 0, elapsed: time.Second,
			want: State{Idle: true, Quiet: 3}, changed: true,
		},
		"idle stays idle on more quiet samples, no change": {
			from: State{Idle: true, Quiet: 3}, allocated: 10, elapsed: time.Second,
			want: State{Idle: true, Quiet: 4},
		},
		"a busy sample makes an idle process busy at once": {
			from: State{Idle: true, Quiet: 9}, allocated: 1000, elapsed: time.Second,
			want: State{}, changed: true,
		},
		"a busy sample resets the quiet count of a busy process, no change": {
			from: State{Quiet: 2}, allocated: 5000, elapsed: time.Second,
			want: State{},
		},
		"the rate is per second: 1,500 bytes in 2 s is quiet": {
			from: State{}, allocated: 1500, elapsed: 2 * time.Second,
			want: State{Quiet: 1},
		},
		"the rate is per second: 600 bytes in half a second is busy": {
			from: State{Idle: true, Quiet: 3}, allocated: 600, elapsed: 500 * time.Millisecond,
			want: State{}, changed: true,
		},
		"no time elapsed: no sample": {
			from: State{Quiet: 2}, allocated: 0, elapsed: 0,
			want: State{Quiet: 2},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got, changed := p.Next(tc.from, tc.allocated, tc.elapsed)
			g.Expect(got).To(gomega.Equal(tc.want))
			g.Expect(changed).To(gomega.Equal(tc.changed))
		})
	}
}

// forcedCollections is how many collections the process forced so far.
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sink keeps the test's allocations on the heap.
var sink []byte

// gcPercent is the runtime's current target, read without changing it.
func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestPacer_Start_LowersTheTargetWhileIdleAndRestoresItUnderAllocations(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(gcPercent()).To(gomega.BeEquivalentTo(100), "the test starts from Go's default")
	p := Pacer{Busy: 100, Idle: 30, QuietRate: 1 << 20, QuietSamples: 2, Interval: 20 * time.Millisecond, FreeEvery: time.Hour}
	lastReturn.Store(0) // no return before this test's
	forced := forcedCollections()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()

	g.Eventually(gcPercent).Should(gomega.BeEquivalentTo(30), "idle: the test allocates little")
	g.Eventually(forcedCollections).Should(gomega.Equal(forced+1), "the free heap returned on becoming idle")

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				sink = make([]byte, 256<<10) // far above 1 MiB per 20 ms
				time.Sleep(time.Millisecond)
			}
		}
	}()
	g.Eventually(gcPercent).Should(gomega.BeEquivalentTo(100), "busy again while the test allocates")
	g.Consistently(gcPercent, 200*time.Millisecond).Should(gomega.BeEquivalentTo(100), "busy as long as the allocations go on")
	close(stop)
	<-stopped
	g.Eventually(gcPercent).Should(gomega.BeEquivalentTo(30), "idle again once they stopped")
	g.Consistently(forcedCollections, 100*time.Millisecond).Should(gomega.Equal(forced+1), "not returned again within FreeEvery")

	cancel()
	g.Eventually(done).Should(gomega.Receive(gomega.Succeed()))
	g.Expect(gcPercent()).To(gomega.BeEquivalentTo(100), "Busy is set back on return")
}

func TestPacer_Start_NoSecondReturnWithinFreeEveryOfTheCallers(t *testing.T) {
	g := gomega.NewWithT(t)
	p := Pacer{Busy: 100, Idle: 30, QuietRate: 1 << 20, QuietSamples: 2, Interval: 20 * time.Millisecond, FreeEvery: time.Hour}
	ReturnToOS() // as cmd/reroll does after the first pass
	forced := forcedCollections()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()
	g.Eventually(gcPercent).Should(gomega.BeEquivalentTo(30), "idle: the test allocates little")
	g.Consistently(forcedCollections, 100*time.Millisecond).Should(gomega.Equal(forced), "returned less than FreeEvery before: not again")
	cancel()
	g.Eventually(done).Should(gomega.Receive(gomega.Succeed()))

	// Past FreeEvery the Pacer returns the heap itself.
	lastReturn.Store(time.Now().Add(-2 * p.FreeEvery).UnixNano()) // the caller's return, FreeEvery and more before
	forced = forcedCollections()
	ctx, cancel = context.WithCancel(t.Context())
	go func() { done <- p.Start(ctx) }()
	g.Eventually(forcedCollections).Should(gomega.Equal(forced+1), "returned more than FreeEvery before: returned on becoming idle")
	cancel()
	g.Eventually(done).Should(gomega.Receive(gomega.Succeed()))
}

func TestDefault_BusyWithinAQuarterSecondIdleAfterThreeQuietSeconds(t *testing.T) {
	g := gomega.NewWithT(t)
	p := Default()
	g.Expect(p.Interval).To(gomega.BeNumerically("<=", 250*time.Millisecond), "a burst of changes finds the target at 25 for at most one sample")
	// Idle after three seconds under QuietRate, and not before.
	var s State
	var changed bool
	elapsed := time.Duration(0)
	for !s.Idle {
		s, changed = p.Next(s, uint64(p.QuietRate*p.Interval.Seconds()/2), p.Interval)
		elapsed += p.Interval
		g.Expect(elapsed).To(gomega.BeNumerically("<=", 3*time.Second), "still busy after three quiet seconds")
	}
	g.Expect(changed).To(gomega.BeTrue())
	g.Expect(elapsed).To(gomega.Equal(3*time.Second), "idle after three quiet seconds")
	// A fan-out's first sample (a rollout allocates ~60 KB; the fan-out
	// profile rolls ~60 a second) is busy at once.
	s, changed = p.Next(s, 15*60<<10, p.Interval)
	g.Expect(changed).To(gomega.BeTrue())
	g.Expect(s.Idle).To(gomega.BeFalse(), "a burst of rollouts is busy at its first sample")
}
