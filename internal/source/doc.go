// Package source holds the planner's views of what a workload consumes
// (plan.Source): Cache reads ConfigMaps and Secrets from Reroll's store of
// keyed digests and SecretProviderClassPodStatuses from the manager's cache,
// with no API request; Legacy reads them again from the API server and
// digests them under an older key, for a record made under it (a key
// rotation, an upgrade from the legacy scheme); WaveHash reads the values
// Wave's dialect hashes, only when a Wave workload rolls.
package source
