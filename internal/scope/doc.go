// Package scope is what Reroll watches and may touch: the Scope of
// namespaces and label selectors (--namespaces, --namespaces-to-ignore,
// --namespace-selector, --resource-label-selector), the manager's cache and
// client options built from it, the cache transform of workloads
// (Transform), and the permission probes (SelfSubjectAccessReviews) that
// turn a missing CRD or RBAC rule into one log line at start instead of a
// controller that never syncs.
package scope
