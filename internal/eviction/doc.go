// Package eviction restarts the pods of a workload whose pod template Reroll
// may not change (an operator owns it, or there is none) through the
// Eviction API, one pod at a time by default, as `kubectl drain` does, so
// that PodDisruptionBudgets are honoured.
//
// It has three parts: the progress record kept in an annotation on the
// workload or pod owner (Progress), the pure decision of what to do next
// (Decide), and the writer that evicts one pod and, when a
// PodDisruptionBudget refuses, names the budget (Evict, BlockingBudget).
// The package also holds the pure check that detects an operator putting
// back a pod template Reroll changed (DetectRevert).
package eviction
