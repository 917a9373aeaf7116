// Package baseline encodes the baselines Reroll keeps outside the workloads
// it has not rolled yet (docs/design.md, "Install: no write per workload"):
// per namespace, one ConfigMap in Reroll's own namespace whose data maps
// "<Kind>.<name>" of a workload to the record (plan.RecordAnnotation's
// value) Reroll would otherwise have written on it, bound to the workload's
// UID and signed under the installation key. It is pure: sealing, opening
// and merging entries into a ConfigMap's data, within a size bound; the
// controller reads and writes the ConfigMaps.
package baseline
