// Package digest turns ConfigMap and Secret data into digests: one
// HMAC-SHA-256 per key under the installation Key, which is what Reroll
// compares to decide whether a consumed key changed, and the SHA-1 that
// Stakater Reloader computes over a whole object, which Reloader's outputs
// carry so that a switch from Reloader restarts nothing.
//
// Transform is the informer cache transform that applies this to every
// ConfigMap and Secret as it enters the cache, so values are never held in
// memory beyond the decoding of one object.
package digest
