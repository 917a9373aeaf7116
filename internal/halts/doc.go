// Package halts keeps the durable records of the change sets that safe
// delivery's circuit breaker halted (internal/delivery decides; this package
// stores): one ConfigMap in Reroll's own namespace, one key per set.
//
// The records are read at every change that rolls, so they are read from a
// watch of that one ConfigMap (a field selector on its name, which RBAC
// grants by resourceNames), never with a request per change; they are
// written with resourceVersion guards, and what this process wrote stands
// in for the watch's copy until the watch has seen it.
package halts
