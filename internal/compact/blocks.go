package compact

import (
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// blockLen is how many Workloads Blocks.From takes from one array while
// the Blocks are on: 28 of 288 bytes (with the runtime's 8-byte header for
// an object over 512 bytes) fill one 8 KiB size class, where the runtime
// puts 27 Workloads allocated one by one in an 8 KiB span.
const blockLen = 28

// Blocks is where the cache's transform takes the Workloads of the
// initial list: while on (SetOn(true), while the cache fills; cmd/reroll
// turns them off once it has synced), From takes each Workload from an
// array of blockLen (28) allocated together; off (the zero Blocks, or a
// nil *Blocks), From allocates each by itself. Its methods are safe for
// concurrent use: each informer's transform runs on its own goroutine.
//
// The initial list decodes every cached workload whole and keeps only its
// compact form, so that each Workload allocated by itself lands in a span
// among the decode's garbage of the same size (the 288-byte class, which
// the decoder's label maps fill): after the list the Workloads of the
// fan-out bench profile's 2,020 Deployments kept 181 spans of 27 slots 61%
// full, 0.58 MB of free slots that no later allocation filled; in arrays
// of 28 they fill 73 spans (docs/benchmarks.md, "Workloads of the initial
// list in blocks"). An array stays in memory while any of its Workloads is
// cached, as a span does while any of its objects lives; it is never
// reused, so blocks are for the initial list only: later updates replace
// Workloads one at a time, each allocated by itself.
type Blocks struct {
	// on is whether From takes Workloads from free.
	on atomic.Bool
	mu sync.Mutex
	// free is the unused rest of the last array allocated.
	free []Workload
}

// SetOn turns the Blocks on (true) or off (false); off drops the rest of
// the current array.
func (b *Blocks) SetOn(on bool) {
	b.on.Store(on)
	if !on {
		b.mu.Lock()
		b.free = nil
		b.mu.Unlock()
	}
}

// On reports whether the Blocks are on; false for a nil *Blocks.
func (b *Blocks) On() bool { return b != nil && b.on.Load() }

// From is the package's From, with the Workload it returns taken from b's
// current array while b is on (b may be nil: off).
func (b *Blocks) From(obj any) (client.Object, bool) { return from(obj, b) }

// newWorkload returns a zero Workload: the next of the current array
// while b is on, else one allocated by itself.
func (b *Blocks) newWorkload() *Workload {
	if !b.On() {
		return &Workload{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.free) == 0 {
		b.free = make([]Workload, blockLen)
	}
	w := &b.free[0]
	b.free = b.free[1:]
	return w
}
