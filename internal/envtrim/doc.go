// Package envtrim keeps what Reroll reads of a pod template's env vars and
// no more: a literal value longer than MaxValue becomes a digest of it, in
// the manager's cache, so large env values are not held once per workload
// and pod. Reroll reads env var names and valueFrom references, never a long
// literal value.
package envtrim
