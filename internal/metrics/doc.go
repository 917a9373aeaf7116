// Package metrics holds Reroll's own Prometheus metrics: rollouts, the time
// from a change to its rollout, changes that rolled nothing, the tracked
// references, and the count of Kubernetes API requests by verb and resource
// (client-go's rest_client_requests_total only has the HTTP method, which
// cannot tell a LIST from a GET from a WATCH). They are registered with
// controller-runtime's registry, so the manager serves them on /metrics
// beside its workqueue, reconcile and REST client metrics (docs/metrics.md
// lists them all). The hooks of hooks.go feed them from a workload
// controller's watches and reconciler: the time a change was seen, the
// workloads a change matched, each Reconcile.
package metrics
