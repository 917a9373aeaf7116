package compact

import (
	"sync"
	"sync/atomic"
)

// blockLen is how many Workloads From takes from one array while
// InitialList is on: 28 of 288 bytes (with the runtime's 8-byte header for
// an object over 512 bytes) fill one 8 KiB size class, where the runtime
// puts 27 Workloads allocated one by one in an 8 KiB span.
const blockLen = 28

// initialList is whether From takes Workloads from blocks (InitialList).
var initialList atomic.Bool

// blocks is the block From takes Workloads from while InitialList is on:
// the unused rest of the last array allocated.
var blocks struct {
	mu   sync.Mutex
	free []Workload
}

// InitialList sets whether From takes the Workloads it returns from
// arrays of blockLen (28) allocated together, on (true) while the cache
// fills and off (false) once it has synced (cmd/reroll). The initial list
// decodes every cached workload whole and keeps only its compact form, so
// that each Workload allocated by itself lands in a span among the
// decode's garbage of the same size (the 288-byte class, which the
// decoder's label maps fill): after the list of the fan-out bench
// profile that class kept 181 spans of 27 slots 61% full, 0.58 MB of free
// slots that no later allocation filled; with the Workloads in 74 arrays
// of 28 it keeps 43 spans 88% full, and the heap in use is 0.45 to 0.7 MB
// smaller (docs/benchmarks.md, "Workloads of the initial list in
// blocks"). An array stays in memory while any of its Workloads is
// cached, as a span does while any of its objects lives, but its dead
// slots are never reused, so blocks are for the initial list only: later
// updates replace Workloads one at a time, each allocated by itself. Off
// drops the rest of the current block.
func InitialList(on bool) {
	initialList.Store(on)
	if !on {
		blocks.mu.Lock()
		blocks.free = nil
		blocks.mu.Unlock()
	}
}

// newWorkload returns a zero Workload: the next of the current block
// while InitialList is on, else one allocated by itself.
func newWorkload() *Workload {
	if !initialList.Load() {
		return &Workload{}
	}
	blocks.mu.Lock()
	defer blocks.mu.Unlock()
	if len(blocks.free) == 0 {
		blocks.free = make([]Workload, blockLen)
	}
	w := &blocks.free[0]
	blocks.free = blocks.free[1:]
	return w
}

// InitialListOn reports whether InitialList is on.
func InitialListOn() bool { return initialList.Load() }
