// Package halts keeps the durable records of the change sets that safe
// delivery's circuit breaker halted (internal/delivery decides; this package
// stores): one ConfigMap per set in Reroll's own namespace, named
// "<prefix>-<set ID>" and labelled LabelKey=<prefix>, its record bounded in
// size (delivery.Halt.Bounded). So one tenant's halts fill no one else's
// room: each set has its own object, and a record superseded by a newer
// content (no workload names its set any more) is deleted (Expire).
//
// The records are read at every change that rolls, so they are read from a
// watch of the labelled ConfigMaps of Reroll's namespace, never with a
// request per change; they are written with resourceVersion guards, and
// what this process wrote stands in for the watch's copy until the watch
// has seen it.
package halts
