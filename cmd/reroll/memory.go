package main

import (
	"context"
	"os"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/store"
)

// freeMemoryAfterSync makes the manager return to the operating system,
// once, the memory that filling the caches left behind. Every ConfigMap and
// Secret is decoded whole before the cache transform replaces its values
// with digests, so the initial sync makes garbage in proportion to the
// cluster's data while what stays live does not; without this the Go
// runtime keeps the peak's pages for minutes. It returns an error only when
// the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager, st *store.Store) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) && st.WaitForSync(ctx) == nil {
			debug.FreeOSMemory()
		}
		return nil
	}))
}

// defaultGOGC is the garbage collector's target, in percent of the live
// heap, when the GOGC environment variable is not set. Reroll's heap is
// almost all its caches, which live as long as the process; Go's default of
// 100 lets the heap grow to twice that between collections, and the process
// keeps those pages. At 25 it collects four times as often, which costs
// little since Reroll allocates little between changes: on the large bench
// profile, RSS after sync 60 MiB instead of 69 MiB, and start-up 1.3 s
// instead of 0.9 s (docs/benchmarks.md).
const defaultGOGC = 25

// setGCPercent applies defaultGOGC unless GOGC is set. GOMEMLIMIT, which the
// Helm chart derives from the container's limit, still applies on top.
func setGCPercent() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(defaultGOGC)
	}
}
