// Package changeset is what Reroll keeps and reads for safe delivery
// (--change-sets): the halt records of the change sets the circuit breaker
// halted (internal/halts, from a watch), with the halts held from memory
// while the API refuses their record; the order of rollouts (the waves of
// Namespaces and workloads, from the cache); the members of a set with
// their kstatus health (Members); the field indexes these lists use; the
// expiry of superseded halt records (Expire, run by the leader); and the
// reroll_change_sets_halted metric. The pure decisions are in
// internal/delivery and plan.Decide; observe reads through Sets, and the
// writer of a reconcile (internal/apply) records a halt through Record.
package changeset
