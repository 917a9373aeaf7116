package main

import (
	"context"
	"os"
	"runtime/debug"

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
// of 69 MiB at 100, start-up 1.3 s instead of 0.9 s). Once synced Reroll
// allocates little between changes, so collecting at 10% costs little CPU
// and keeps the pages of a large cache closer to its size (xl profile, RSS
// after sync: 171 MiB at 25, 146 MiB at 10 throughout, whose start-up took
// 52% more CPU; docs/benchmarks.md).
const (
	startupGOGC = 25
	syncedGOGC  = 10
)

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
// synced, lower the collector's target to syncedGOGC (unless GOGC is set)
// and return to the operating system, once, the memory that filling them
// left behind. Every ConfigMap and Secret is decoded whole before the
// transform replaces its values with digests, so the initial sync makes
// garbage in proportion to the cluster's data while what stays live does
// not; without this the Go runtime keeps the peak's pages for minutes. It
// returns an error only when the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager, st *store.Store) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) && st.WaitForSync(ctx) == nil {
			if !gcPercentSet() {
				debug.SetGCPercent(syncedGOGC)
			}
			debug.FreeOSMemory()
		}
		return nil
	}))
}
