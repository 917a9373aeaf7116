// Package podgroup restarts by eviction the groups of pods that opt in with
// their own annotations and whose controller is a kind Reroll neither
// handles nor re-templates, such as an operator's custom resource it was
// not told about with --evict-owner (Reloader issue #250). The pods of one
// controller form a group; a pod with no controller is a group of its own,
// whose pod is never evicted (plan.ReasonNotEvicted).
//
// A group's reconcile makes the same three calls as a workload's: Observe
// (the group's pods from the cache, its record), Decide (plan.DecideRecord
// on the group as a workload, then eviction.Decide; pure but for the
// Source it reads the ConfigMaps and Secrets through) and the writer
// (apply.PodGroup: the record, then the evictions, then the record again).
//
// Reroll may neither patch such pods nor read their owner, so the record
// of a group (the annotations a workload would carry: what it consumes and
// the restart by eviction under way, eviction.ProgressAnnotation) lives in
// state.Entries in Reroll's own namespace (--pod-records is their prefix),
// one signed entry per group keyed by its namespace and controller UID
// (the pod's own UID for a bare pod), whose value is the JSON object of
// those annotations: one ConfigMap per group, so one tenant's groups never
// fill another's, and a group's reconcile reads and writes its own record
// only (Records).
package podgroup
