// Package v1alpha1 holds the reroll.dev/v1alpha1 API: the Projection, which
// keeps fields of one object (a custom resource, usually) equal to values
// from ConfigMaps and Secrets in its namespace, or to a keyed digest of
// them. internal/projection reconciles it; docs/projections.md describes it.
//
// +kubebuilder:object:generate=true
// +groupName=reroll.dev
package v1alpha1
