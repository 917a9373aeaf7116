// Package compact is the form in which the manager's cache holds
// Deployments, StatefulSets and DaemonSets (issue #36): their metadata as
// Go values, and their spec and status, already trimmed by the cache
// transform (scope.Transform), as the protobuf encoding of the apps/v1
// types. A Workload decodes to the trimmed typed object whenever the cache
// copies it (DeepCopyObject), so a Get or List from the cache returns the
// typed object as before; event handlers, predicates and field index
// functions, which receive the cached object itself, read its metadata
// directly and its spec or status through Expand.
package compact
