// Package firstsight is the controller's memory for the first-sight rule
// (plan/firstsight.go): the revision at which each workload's creation was
// seen on the watch, until its first sight is recorded; the change a
// first-sight rollout was first held for, so that a burst that goes on
// cannot hold it past the coalescing max-wait; and, with
// plan.Options.DeferRecord, the baseline of each workload Reroll leaves
// unrecorded. It is memory only: after a restart the rule orders by
// seconds, which can only add a rollout, never lose one.
package firstsight
