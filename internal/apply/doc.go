// Package apply is the write step of a workload's reconcile, the only
// writer: Applier.Apply carries out a plan (plan.Plan, from plan.Decide) in
// one documented order (reconcile.go): the halt records of change sets
// (halt.go, through internal/changeset) and their Events, the Warnings,
// the stop on a hold, the notification endpoint's POST (notify.go), the
// workload, Reroll's memory and the rollout bound (memory.go), the Events,
// alerts, audit lines (audit.go) and metrics (metrics.go), then the
// evictions and their progress (evict.go; EvictPods is the one eviction
// loop, of annotated pods too).
//
// Writer writes the workload of a plan: its metadata (the record, Reroll's state, the managed label, the pause
// annotation) and spec.paused, and, when the plan rolls, the rollout, in
// one small write step per way of rolling, each in its own file:
// template.go (the pod template's trigger), workloadref.go (the Deployment
// an Argo Rollout's spec.workloadRef names), restartat.go (spec.restartAt),
// job.go (a Job created from a CronJob) and recreate.go (a Job deleted and
// created again, through its kind's workload.Roller).
//
// Every write of the workload is one patch (workload.Patch), guarded by
// its resourceVersion when the plan answers a change or records a first
// sight, so that a stale copy conflicts and the caller decides again. The
// plan is written as Decide returned it: every value, a deferred trigger's
// included, is known, and nothing in Writer reads the cluster but the Deployment
// a workloadRef names. Applier.Apply calls Workload as its step 5.
package apply
