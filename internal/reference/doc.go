// Package reference reads, from a pod template, which ConfigMaps and Secrets
// the pods consume and which of their keys: the input of every decision
// Reroll makes about whether a change matters to a workload.
//
// It follows how the kubelet resolves references: env[].valueFrom reads one
// key, envFrom reads every key, a configMap or secret volume reads the keys
// listed in items (every key when items is empty), and a projected volume
// reads each of its sources the same way. Optional references count, and so
// do volumes that no container mounts, because a later template change could
// mount them without another look at the object.
package reference
