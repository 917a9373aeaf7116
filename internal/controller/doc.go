// Package controller holds Reroll's reconcilers and their wiring. The
// workload is the root object: each Deployment, StatefulSet, DaemonSet (and
// each kind given by --workload) that opted in is indexed by the ConfigMaps,
// Secrets and SecretProviderClasses it consumes, a change to one of those
// maps to the workloads through that index (after the debounce of
// internal/coalesce), and Reconcile compares the data the workload consumes
// now with what Reroll recorded on the workload, rolling it when a consumed
// key changed. A second reconciler restarts pods that opt in with their own
// annotations and whose owner Reroll does not handle (annotatedpods.go).
//
// Setup (workload_manager.go) builds what the kinds share and one
// reconciler per kind: its indexes (workload_indexers.go), its watches and
// its controller's options, the fair queue included.
//
// One reconcile (WorkloadReconciler.sync) reads the workload and its
// surroundings, asks internal/plan for a decision (plan.DecideAcrossKeys,
// from internal/source's views of the cache), then amends the plan with safe delivery (workload_delivery.go),
// the storm breaker, restarts by eviction and revert detection, and writes:
// halt records, Warning Events, the notification endpoint's POST
// (workload_notify.go), the workload in one write step per way of rolling
// (workload_apply.go), its Events and alerts, and eviction progress. Issue
// #31 moves these into gather, decide and write steps. What is not wiring
// lives beside: the mutating admission webhook in internal/webhook; Reroll's
// own records (the digest key Secret, the Job journal, signed entries and
// baselines) in internal/state; the scope, cache options and permission
// probes in internal/scope; the first-sight memory in internal/firstsight;
// the metrics hooks of the watches in internal/metrics.
package controller
