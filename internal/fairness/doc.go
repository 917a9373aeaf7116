// Package fairness shares a controller's workers between namespaces.
//
// controller-runtime hands a controller's queued requests to its workers in
// priority order, first in first out within a priority, whatever their
// namespace: one namespace that queues many requests at once (many
// workloads whose ConfigMap changed, a flood of changes, Projections whose
// sources change all the time) would make every other namespace's request
// wait behind all of them. Here each namespace has a token bucket
// (golang.org/x/time/rate): a request added while its namespace has a token
// keeps its priority; one added while its namespace's bucket is empty is
// queued at Deferred, behind every in-budget request of every namespace.
// Nothing is dropped and no worker idles: deferred requests run as soon as
// nothing in budget is ready. The queue itself is controller-runtime's
// priority queue; NewQueue only chooses the priority of each add.
//
// The buckets live in memory, one per namespace seen recently; a namespace
// whose bucket has filled up again is forgotten, so memory follows the
// namespaces active in the last Burst/Rate seconds, not all namespaces ever
// seen. A restart forgets every bucket, which only gives every namespace a
// full burst again.
package fairness
