// Package plan decides what Reroll does with one workload, without writing
// anything: Decide takes the workload (its annotations, its pod template, how
// its kind rolls), a read-only view of the ConfigMaps and Secrets it may
// consume (Source: annotations, per-key digests, uid and resourceVersion;
// never values), the options and the time, and returns a Plan: what to record
// on the workload, whether and how to roll it, what to tell (Events, the
// alert, the --webhook-url notification, all from one change.Change), and why
// (each object considered, the rule that selected or dropped it, each changed
// key, each rule that held a rollout back).
//
// Decide makes no API call and is deterministic given its inputs, so the
// controller (Source backed by its cache), the admission webhook and the
// kubectl plugin (Source backed by live reads, or by manifests overlaid on
// them) reach the same decision. The controller writes a Plan in one small
// step per kind (internal/controller's apply).
package plan
