// Package controller holds Reroll's reconciler. The workload is the root
// object: each Deployment, StatefulSet and DaemonSet that opted in is indexed
// by the ConfigMaps and Secrets it consumes, a change to one of those maps to
// the workloads through that index, and Reconcile compares the data the
// workload consumes now with what Reroll recorded on the workload, rolling it
// when a consumed key changed. The decision is internal/plan's (plan.Decide,
// from the cache); this package reads, applies the plan in one write step per
// way (workload_apply.go) and tells (Events, alerts, notifications).
package controller
