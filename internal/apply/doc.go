// Package apply writes the workload of a plan (plan.Plan, from plan.Decide):
// its metadata (the record, Reroll's state, the managed label, the pause
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
// included, is known, and nothing here reads the cluster but the Deployment
// a workloadRef names. The controller calls Workload as step 5 of its one
// writer (internal/controller's write), which documents the order of a
// reconcile's writes.
package apply
