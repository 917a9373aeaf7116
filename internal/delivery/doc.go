// Package delivery decides how one change of ConfigMaps and Secrets is
// delivered to the workloads that read it: in waves, lowest first, each
// wave only once every earlier one is complete, healthy and baked, and
// halted by a circuit breaker once enough of its rollouts failed.
//
// A change set is every object that changed to one content: the copies of
// one ConfigMap or Secret that a replicator keeps in several namespaces
// change together and are one set (SetID). Its members are the workloads
// that roll for it; each carries its own part of the set's state in
// MemberAnnotation, and a halt is recorded in Reroll's own namespace
// (Halt), so a restarted Reroll decides exactly as before.
//
// Decide is a pure function of the set, the members' observed health and
// the time; Health judges a rollout with kstatus, the library Flux and kpt
// use for the same question. The controller gathers the inputs and applies
// the Decision.
package delivery
