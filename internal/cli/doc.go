// Package cli is `kubectl reroll`, the kubectl plugin that answers the
// questions Reroll's users ask: which workloads read this ConfigMap or
// Secret (who-uses), why did this workload roll (why), what would these
// manifests roll (plan), and is Reroll healthy (status). It reads the
// cluster with the user's own credentials, through cli-runtime's standard
// flags, and never writes. Values of ConfigMaps and Secrets are read only to
// be digested, as Reroll's cache does, and are never printed; an object the
// user may not read is reported as such, never guessed.
package cli
