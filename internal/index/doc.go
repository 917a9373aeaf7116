// Package index holds the field indexes of the workloads that the
// controller's map functions look up in the cache, instead of asking the
// API server: the ConfigMaps, Secrets and SecretProviderClasses each
// workload may consume (References), the Deployment whose pod template a
// workload runs (TemplateFrom) and the workloads with a restart by eviction
// under way (Evicting). Each index is a name and a pure function of one
// object. controller-runtime scopes field indexes by namespace, so a lookup
// in an object's namespace is exact. The indexes of safe delivery are in
// internal/changeset, the rollout bound's in internal/rollout.
package index
