// Package pingc collects the copies that pinning (internal/pin) makes of
// ConfigMaps and Secrets, and tells when a rotation is complete.
//
// A copy lives while anything that can start a pod, or is a pod, names it:
// a workload's own pod template, a ReplicaSet (Deployments and Argo
// Rollouts keep revisionHistoryLimit of them), a ControllerRevision
// (StatefulSets and DaemonSets keep as many), a Job (of a CronJob or not),
// or a pod. Kubernetes' own controllers prune ReplicaSets and
// ControllerRevisions beyond revisionHistoryLimit, so whatever still
// exists is within it. Once none names a copy, and it was last written
// more than Grace ago (a copy just created or claimed, whose workload's
// template write has not happened yet, looks unused), Reroll deletes it,
// with its UID and resourceVersion as preconditions, so that a copy
// re-created or claimed since the read is never deleted. Reroll deletes
// only copies whose keyed signature verifies (pin.Verify): a look-alike
// that a tenant made, labels and all, is left alone. Copies have no owner
// references (one copy is shared by every workload of its namespace that
// consumes its content, and Kubernetes deletes a dependent with the last
// of its listed owners, so only a list of every sharer would be safe, at
// one write per sharer): a deleted workload's copy is collected here once
// Kubernetes has deleted its ReplicaSets, revisions, Jobs and pods.
//
// The work is per namespace, and only where copies exist: a reconciler
// keyed by namespace lists the copies there (metadata only, by label) and,
// only as far as needed, the objects that could name them, and looks
// again every Period while copies remain. No informer on pods or
// ReplicaSets is added: Reroll's memory does not grow with them.
//
// The rotation receipt is decided from the same reads: a copy whose
// content is no longer the source's is a previous version; when no pod
// names it any more, Reroll records that on the copy (a signed
// annotation, so that a restart neither repeats nor loses it) and emits a
// Converged Event on the source.
//
// Decisions are pure functions (Decide, DecideReceipts), table-tested;
// the Reconciler gathers, decides, then writes.
package pingc
