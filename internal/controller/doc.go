// Package controller holds Reroll's reconcilers and their wiring. The
// workload is the root object: each Deployment, StatefulSet, DaemonSet (and
// each kind given by --workload) that opted in is indexed by the ConfigMaps,
// Secrets and SecretProviderClasses it consumes, a change to one of those
// maps to the workloads through that index (after the debounce of
// internal/coalesce), and Reconcile compares the data the workload consumes
// now with what Reroll recorded on the workload, rolling it when a consumed
// key changed. A second reconciler restarts pods that opt in with their own
// annotations and whose owner Reroll does not handle (annotatedpods.go), in
// the same three steps: podgroup.Observe, podgroup.Decide and
// apply.PodGroup (internal/podgroup).
//
// Setup (workload_manager.go) builds what the kinds share and one
// reconciler per kind: its indexes (internal/index; the map functions that
// look them up are in workload_indexers.go), its watches, its
// controller's options, the fair queue included, and its gather and write
// steps (observe.Deps, apply.Applier).
//
// One reconcile (WorkloadReconciler.sync) makes three calls, each into its
// own package: observe.Workload gathers what the decision needs
// (internal/observe, reads only; the reads only some decisions need stay
// behind plan.View, which observe.View implements over internal/source and
// internal/changeset), plan.Decide decides everything (the change,
// validation, safe delivery, the storm breaker, the holds, the notification
// step, the restart by eviction and the revert check), and
// apply.Applier.Apply, the only writer, carries the plan out in one
// documented order (internal/apply): halt records, Warning Events, the stop
// on a hold, the notification endpoint's POST, the workload in one write
// step per way of rolling, Reroll's memory and the rollout bound, Events
// and alerts, then the evictions and their progress.
//
// What is not wiring lives beside: the mutating admission webhook and its
// handler in internal/webhook; the Validators' setup in internal/validator;
// the CSI integration's informer in internal/source; Reroll's own records (the digest key Secret, the Job
// journal, signed entries and baselines) in internal/state; safe
// delivery's halt records, waves and members in internal/changeset; the
// scope, cache options and permission probes in internal/scope; the
// first-sight memory in internal/firstsight; the metrics hooks of the
// watches in internal/metrics.
package controller
