// Package observe is the first step of a workload's reconcile, gather:
// it reads what plan.Decide needs (the pod template, the namespace's
// annotations, the baseline Reroll keeps, the coalescing, the options of
// safe delivery, the storm breaker and the restart), and implements
// plan.View, the reads that only some decisions need, lazily, so that a
// reconcile costs no more requests than those decisions ask: the
// ConfigMaps and Secrets from the store (internal/source), the change
// sets' halts, waves and members (internal/changeset), the workload's
// pods, the Validators' verdict, and the API server for what the cache
// cannot tell (managedFields, a fresh resourceVersion, a Wave workload's
// values).
//
// It only reads. Everything it reads through is passed in, explicitly, in
// Deps, which the controller builds once per kind; the next step is
// plan.Decide (pure), and the one after it internal/apply, the only
// writer.
package observe
