package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/store"
)

// The garbage collector's targets, in percent of the live heap, when the
// GOGC environment variable is not set. Reroll's heap is almost all its
// caches, which live as long as the process; Go's default of 100 lets the
// heap grow to twice that between collections, and the process keeps those
// pages.
//
// While the caches fill, Reroll decodes every ConfigMap and Secret of the
// cluster and drops their values: garbage in proportion to the cluster's
// data, where each collection marks a heap that is still growing. 25 is the
// measured balance there (large bench profile: RSS after sync 60 MiB instead
// of 69 MiB at 100, start-up 1.3 s instead of 0.9 s).
//
// Once synced, the collector's CPU per byte allocated is in inverse
// proportion to the target, whatever the heap's size, while the memory a
// lower target saves is in proportion to the heap: so the target becomes
// what lets the heap grow by syncedHeadroom, within [syncedGOGCMin,
// startupGOGC]. On the xl bench profile (~90 MiB live) that is 10: RSS
// after sync 146.8 MiB instead of ~171 MiB at 25; on the fanout profile
// (~14 MiB live) it stays 25, where 10 cost 45% more CPU for 2,000 patches
// (8.95 s instead of 6.19 s) to save about 2 MiB (docs/benchmarks.md).
const (
	startupGOGC    = 25
	syncedGOGCMin  = 10
	syncedHeadroom = 8 << 20 // bytes
)

// syncedGOGC returns the collector's target for a live heap of live bytes:
// the percent of live that syncedHeadroom is, within [syncedGOGCMin,
// startupGOGC].
func syncedGOGC(live uint64) int {
	if live == 0 {
		return startupGOGC
	}
	return min(startupGOGC, max(syncedGOGCMin, int(100*syncedHeadroom/live)))
}

// liveHeap returns the bytes of heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcPercentSet reports whether GOGC is set in the environment; Reroll then
// leaves the collector's target alone.
func gcPercentSet() bool {
	_, ok := os.LookupEnv("GOGC")
	return ok
}

// setGCPercent applies startupGOGC unless GOGC is set. GOMEMLIMIT, which
// the Helm chart derives from the container's limit, still applies on top.
func setGCPercent() {
	if !gcPercentSet() {
		debug.SetGCPercent(startupGOGC)
	}
}

// freeMemoryAfterSync makes the manager, once the caches and the store have
// synced, return to the operating system, once, the memory that filling
// them left behind, and then set the collector's target to syncedGOGC of
// the live heap (unless GOGC is set). Every ConfigMap and Secret is decoded whole before the
// transform replaces its values with digests, so the initial sync makes
// garbage in proportion to the cluster's data while what stays live does
// not; without this the Go runtime keeps the peak's pages for minutes. It
// returns an error only when the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager, st *store.Store) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) && st.WaitForSync(ctx) == nil {
			debug.FreeOSMemory() // collects first
			if !gcPercentSet() {
				debug.SetGCPercent(syncedGOGC(liveHeap()))
			}
		}
		return nil
	}))
}

// setMemProfileRate turns the runtime's sampling of allocations for heap
// profiles off unless pprof is served (--enable-pprof), the only reader of
// those samples. Sampling is on in every Go program by default: at the
// first sample the runtime maps a hash table of profile buckets (1.4 MB)
// that each new call stack touches, and it keeps one bucket per sampled
// stack for the life of the process.
func setMemProfileRate(pprof bool) {
	if !pprof {
		runtime.MemProfileRate = 0
	}
}
