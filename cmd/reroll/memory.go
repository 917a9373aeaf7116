package main

import (
	"context"
	"os"
	"runtime"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/idlegc"
	"github.com/reroll/reroll/internal/store"
)

// Reroll keeps Go's default garbage-collector target (GOGC=100) while it
// works and lowers it to 25 while it allocates little (internal/idlegc),
// unless the environment sets GOGC; the Helm chart sets GOMEMLIMIT to
// goMemLimitPercent of the container's memory limit, so that the collector
// works harder near that limit. A low target throughout (25 while the
// caches filled, then between 10 and 25) was measured against 100 side by
// side: on the fanout profile 100 costs 17 to 35% less CPU for 12 to 20 MiB
// more RSS (docs/benchmarks.md, "Memory settings side by side";
// docs/design.md). Idle, a low target costs almost no CPU: little is
// allocated between collections.

// freeMemoryAfterSync makes the manager, once the caches and the store have
// synced and the controllers' first pass is done (pass, nil for none:
// every cached workload looked at once), return to the operating system
// the memory that filling them and the pass left behind. Every ConfigMap
// and Secret is decoded whole before the transform replaces its values
// with digests, and every workload before it is trimmed and compacted, so
// the initial sync makes garbage in proportion to the cluster's data while
// what stays live does not; the first pass (the first sight of each
// workload) makes more. Without the return the Go runtime keeps the peak's
// pages until the collector's pacer finds the process idle
// (internal/idlegc, a few seconds later) or for minutes. The runnable
// needs leader election (controller-runtime starts it with the
// controllers, on the replica that leads): a standby's sync garbage is
// returned by the pacer, which runs on every replica. It returns an error
// only when the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager, st *store.Store, pass *idlegc.FirstPass) error {
	var done <-chan struct{}
	if pass != nil {
		done = pass.Done()
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		freeAfter(ctx, mgr.GetCache().WaitForCacheSync(ctx) && st.WaitForSync(ctx) == nil, done)
		return nil
	}))
}

// freeAfter returns the free heap to the operating system
// (idlegc.ReturnToOS, which collects first) once synced, when pass closes
// (nil: at once), and returns then, when ctx is done, or at once when not
// synced (the manager is stopping). With a pass it does not also return
// the heap at sync: the pass starts at once and reuses the sync's free
// pages, and a return in between (one more full collection, and page
// faults as the pass maps the pages again) would give back nothing that
// the return after the pass does not.
func freeAfter(ctx context.Context, synced bool, pass <-chan struct{}) {
	if !synced {
		return
	}
	if pass == nil {
		idlegc.ReturnToOS()
		<-ctx.Done()
		return
	}
	select {
	case <-ctx.Done():
	case <-pass:
		idlegc.ReturnToOS()
	}
}

// blocksUntilSynced turns blocks on, so that the cache keeps the
// Workloads of its initial list in arrays allocated together rather than
// each in a span among the decode's garbage (compact.Blocks), and makes
// the manager (mgr) turn them off once its cache has synced (synced, the
// cache's WaitForCacheSync: true when synced, false when ctx is done
// first), on every replica (the cache fills on a standby too). Later
// updates then allocate each Workload by itself. It returns an error only
// when the manager is already started.
func blocksUntilSynced(mgr interface{ Add(manager.Runnable) error }, blocks *compact.Blocks, synced func(context.Context) bool) error {
	blocks.SetOn(true)
	return mgr.Add(initialListEnd{blocks: blocks, synced: synced})
}

// initialListEnd is the runnable of blocksUntilSynced.
type initialListEnd struct {
	blocks *compact.Blocks
	synced func(context.Context) bool
}

// NeedLeaderElection is false: a standby's cache fills too.
func (initialListEnd) NeedLeaderElection() bool { return false }

// Start waits until the cache has synced or ctx is done, turns the blocks
// off and returns nil.
func (e initialListEnd) Start(ctx context.Context) error {
	e.synced(ctx)
	e.blocks.SetOn(false)
	return nil
}

// paceCollector makes the manager run idlegc.Default(), which lowers the
// collector's target to 25 while Reroll allocates little and keeps Go's
// default while it works, unless the environment sets GOGC (the operator's
// choice then holds throughout). It returns an error only when the manager
// (mgr, a ctrl.Manager) is already started.
func paceCollector(mgr interface{ Add(manager.Runnable) error }) error {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	return mgr.Add(idlegc.Default())
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
