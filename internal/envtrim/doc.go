// Package envtrim keeps what Reroll reads of a pod template and no more,
// in the manager's cache: a literal env value longer than MaxValue becomes
// a digest of it (Values), so large env values are not held once per
// workload and pod; and Keep reduces the pod template of a Deployment,
// StatefulSet or DaemonSet to its annotations and references (each
// container's name, env, envFrom and volume mounts, the volumes and image
// pull secrets). Reroll reads env var names and valueFrom references, never
// a long literal value, and no image, resource or probe.
package envtrim
