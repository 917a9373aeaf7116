package main

import (
	"context"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// freeMemoryAfterSync makes the manager return to the operating system,
// once, the memory that filling the caches left behind. Every ConfigMap and
// Secret is decoded whole before the cache transform replaces its values
// with digests, so the initial sync makes garbage in proportion to the
// cluster's data while what stays live does not; without this the Go
// runtime keeps the peak's pages for minutes. It returns an error only when
// the manager is already started.
func freeMemoryAfterSync(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			debug.FreeOSMemory()
		}
		return nil
	}))
}
