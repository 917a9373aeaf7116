package controller

import (
	"context"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/source"
)

// decide asks the planner what to do with the workload in
// (plan.DecideAcrossKeys), reading ConfigMaps and Secrets from the store,
// and, for a record made under an older key, from the API server
// (source.Legacy: r.legacyDigests keeps their digests per object revision,
// so an object is read once per change, not once per reconcile).
func (r *WorkloadReconciler) decide(ctx context.Context, opts plan.Options, in plan.Input) (plan.Plan, error) {
	src := source.Cache{Ctx: ctx, Reader: r.Client, Store: r.Options.Store}
	older := func(k digest.Key) plan.Source {
		return source.Legacy{Cache: src, Reader: r.APIReader, Key: k, Memo: &r.legacyDigests}
	}
	return plan.DecideAcrossKeys(opts, in, src, older, r.Options.LegacyRecordsUntil)
}
