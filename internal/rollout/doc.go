// Package rollout counts the rollouts Reroll started, across every workload
// kind whose status reports rollout progress, for the concurrent rollout
// bound (--max-concurrent-rollouts and a Namespace's
// reroll.dev/max-concurrent-rollouts).
//
// The count is derived from the objects alone: a field index (Index) of the
// manager's cache says which workloads run a rollout Reroll stamped
// (plan.RolledAtAnnotation, signed) that their status does not yet report
// complete, and which wait with a deferred change (plan.PendingAnnotation),
// so a restarted Reroll counts exactly what runs. A Tracker adds what the
// cache cannot show yet: a rollout written but not seen by the watch is
// bridged in memory until the cache holds the write. Its lock makes
// counting, deciding and writing one step for the controller, so two
// workers cannot both take the last slot; a freed slot wakes the oldest
// waiting workloads (WakeOldest). The Tracker is also the Prometheus
// collector of the bound's gauges, computed from the cache at each scrape.
//
// The decision itself (whether a workload may roll now) is the planner's
// (plan.Decide); this package only gathers plan.Rollouts.
package rollout
