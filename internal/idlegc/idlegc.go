package idlegc

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// lastReturn is when ReturnToOS last returned the free heap, in Unix
// nanoseconds; 0 if it has not.
var lastReturn atomic.Int64

// ReturnToOS returns the free heap to the operating system
// (debug.FreeOSMemory: one full collection, then every free page given
// back) and notes when, so that a Pacer becoming idle less than its
// FreeEvery later lowers its target without returning the heap again:
// cmd/reroll returns it when the controllers' first pass is done, and the
// process becomes idle a few seconds after that.
func ReturnToOS() {
	debug.FreeOSMemory()
	lastReturn.Store(time.Now().UnixNano())
}

// returnedSince reports whether ReturnToOS has returned the heap within d
// before now.
func returnedSince(now time.Time, d time.Duration) bool {
	last := lastReturn.Load()
	return last != 0 && now.Sub(time.Unix(0, last)) < d
}

// allocsMetric is the runtime's cumulative count of bytes allocated on the
// heap.
const allocsMetric = "/gc/heap/allocs:bytes"

// Pacer switches the collector's target between Busy and Idle by the
// process's allocation rate, sampled every Interval. It is a
// controller-runtime manager.Runnable that runs on every replica, leader or
// not.
type Pacer struct {
	// Busy is the target (GOGC percent) while the process allocates at
	// QuietRate or more; the runtime's target when Start is called.
	Busy int
	// Idle is the target (GOGC percent) once QuietSamples samples in a row
	// allocated less than QuietRate.
	Idle int
	// QuietRate is the allocation rate, in bytes per second, below which a
	// sample counts as quiet.
	QuietRate float64
	// QuietSamples is how many quiet samples in a row make the process
	// idle; a single busy sample makes it busy again.
	QuietSamples int
	// Interval is the time between two samples.
	Interval time.Duration
	// FreeEvery is the least time between two returns of the free heap to
	// the operating system (ReturnToOS, by the Pacer on becoming idle or by
	// its caller); a process idle again sooner only lowers the target and
	// lets the runtime's scavenger return the pages. A return is a full
	// collection, whose CPU grows with the live heap (~0.1 to 0.3 s for the
	// xl profile's ~100 MiB), so bursts a few seconds apart must not each
	// pay one.
	FreeEvery time.Duration
}

// Default is the pacer Reroll runs unless GOGC is set in its environment:
// Go's default target while it allocates 256 KiB per second or more, 25
// after three quiet seconds, returning the free heap to the operating
// system at most once a minute. Idle on the fan-out profile (2,050 cached
// Deployments, ~14 MiB live) Reroll allocates ~50 KB per second (metrics
// scrapes, lease renewals, resyncs), so a target of 25 collects about once
// a minute; a rollout allocates ~60 KB, so a burst of changes is busy at
// its first sample. It samples every 250 ms (twelve quiet samples make
// three quiet seconds): until a burst's first sample the target is still
// 25, under which the first rollouts of a fan-out collected six times in
// 0.7 s with a one-second sample (issue #36, docs/benchmarks.md).
func Default() Pacer {
	return Pacer{Busy: 100, Idle: 25, QuietRate: 256 << 10, QuietSamples: 12, Interval: 250 * time.Millisecond, FreeEvery: time.Minute}
}

// State is the pacer's state between two samples.
type State struct {
	// Idle is whether the Idle target is in force.
	Idle bool
	// Quiet counts the quiet samples in a row so far.
	Quiet int
}

// Next returns the state after a sample in which allocated bytes were
// allocated during elapsed, and whether the target changes with it (to
// Idle if the returned state is idle, to Busy otherwise).
func (p Pacer) Next(s State, allocated uint64, elapsed time.Duration) (State, bool) {
	if elapsed <= 0 {
		return s, false
	}
	if float64(allocated)/elapsed.Seconds() >= p.QuietRate {
		return State{}, s.Idle
	}
	s.Quiet++
	if !s.Idle && s.Quiet >= p.QuietSamples {
		return State{Idle: true, Quiet: s.Quiet}, true
	}
	return s, false
}

// NeedLeaderElection is false: a standby replica's memory counts too.
func (Pacer) NeedLeaderElection() bool { return false }

// Start samples the allocations every Interval until ctx is done, and sets
// the collector's target on each change of state. On becoming idle it also
// returns the free heap to the operating system at once (ReturnToOS: one
// collection), since the runtime's scavenger takes longer, unless the heap
// was returned (by the Pacer or anyone else through ReturnToOS) less than
// FreeEvery before. On return it sets Busy back. It returns nil.
func (p Pacer) Start(ctx context.Context) error {
	sample := []metrics.Sample{{Name: allocsMetric}}
	read := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	defer debug.SetGCPercent(p.Busy)
	var s State
	last, at := read(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			n := read()
			var changed bool
			s, changed = p.Next(s, n-last, now.Sub(at))
			last, at = n, now
			if !changed {
				continue
			}
			if s.Idle {
				debug.SetGCPercent(p.Idle)
				if !returnedSince(now, p.FreeEvery) {
					ReturnToOS()
					// The collection's own allocations are not the
					// process's.
					last = read()
				}
			} else {
				debug.SetGCPercent(p.Busy)
			}
		}
	}
}
