package main

import (
	"context"
	"runtime"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/store"
)

// Reroll leaves the garbage collector's target at Go's default (GOGC=100)
// unless the environment sets GOGC, and the Helm chart sets GOMEMLIMIT to
// goMemLimitPercent of the container's memory limit, so that the collector
// works harder only near that limit. Lower targets (25 while the caches
// filled, then between 10 and 25) were measured against it side by side:
// on the fanout profile 100 costs 17 to 35% less CPU for 12 to 20 MiB more
// RSS, and on the xl profile it stays far below Reloader's RSS
// (docs/benchmarks.md, "Memory settings side by side"; docs/design.md).

// freeMemoryAfterSync makes the manager, once the caches and the store have
// synced, return to the operating system, once, the memory that filling
// them left behind. Every ConfigMap and Secret is decoded whole before the
// transform replaces its values with digests, so the initial sync makes
// garbage in proportion to the cluster's data while what stays live does
// not; without this the Go runtime keeps the peak's pages for minutes. It
// returns an error only when the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager, st *store.Store) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) && st.WaitForSync(ctx) == nil {
			debug.FreeOSMemory() // collects first
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
