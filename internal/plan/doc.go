// Package plan decides what Reroll does with one workload, without writing
// anything: DecideChange takes the workload (its annotations, its pod template, how
// its kind rolls), a read-only view of the ConfigMaps and Secrets it may
// consume (Source: annotations, per-key digests, uid and resourceVersion;
// never values), the options and the time, and returns a Plan: what to record
// on the workload, whether and how to roll it, what to tell (Events, the
// alert, the --webhook-url notification, all from one change.Change), and why
// (each object considered, the rule that selected or dropped it, each changed
// key, each rule that held a rollout back).
//
// DecideChange makes no API call and is deterministic given its inputs, so
// the controller (Source backed by its cache) and the kubectl plugin
// (Source backed by live reads, or by manifests overlaid on them) reach the
// same decision. Decide, the controller's, calls it and decides the rest of
// one reconcile: safe delivery (internal/delivery), the storm breaker, the
// holds, the notification step, the restart by eviction (internal/eviction)
// and the revert check (internal/revert), reading what only those need
// through a View, lazily. Nothing changes a Plan after Decide: the
// writer writes it in one fixed order (internal/apply's Applier.Apply).
package plan
