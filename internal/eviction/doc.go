// Package eviction restarts the pods of a workload whose pod template Reroll
// may not change (an operator owns it, or there is none) through the
// Eviction API, one pod at a time by default, as `kubectl drain` does, so
// that PodDisruptionBudgets are honoured.
//
// It has four parts: the workload's choice of restart, read from its
// annotations (ParseMode: reroll.dev/restart, reroll.dev/max-unavailable);
// the progress record kept in an annotation on the workload or pod owner
// (Progress, ParseProgress); the pure decision of what to do next, from the
// pods as the cache holds them (Decide, with FromPod and the cache
// transform TransformPod); and the writer that evicts one pod (Evict) and,
// when the API server refuses, says which PodDisruptionBudget refused and
// when to try again (BlockedError, BudgetName, RetryDelay). The RBAC
// markers of --enable-pod-eviction live here too (rbac.go). Detecting an
// operator that puts back a pod template Reroll changed is
// internal/revert's.
package eviction
