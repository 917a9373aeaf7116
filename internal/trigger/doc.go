// Package trigger writes the change to a pod template that makes the
// workload's own controller roll its pods, as `kubectl rollout restart` does
// with its kubectl.kubernetes.io/restartedAt annotation.
//
// Two strategies exist, named as Reloader's --reload-strategy values:
// "annotations" sets the pod template annotation reroll.dev/config-hash, and
// "env-vars" sets Reloader's STAKATER_<NAME>_<CONFIGMAP|SECRET> environment
// variable to Reloader's SHA-1 of the object, so that workloads Reloader
// already rolled keep the exact value and a switch restarts nothing.
package trigger
