// Package metrics defines Reroll's own Prometheus metrics: rollouts, the time
// from a change to its rollout, changes that rolled nothing, and the tracked
// references. They are registered with controller-runtime's registry, so the
// manager serves them on /metrics beside its workqueue, reconcile and REST
// client metrics (docs/metrics.md lists them all).
package metrics
