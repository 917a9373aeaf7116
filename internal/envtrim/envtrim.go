package envtrim

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
)

// MaxValue bounds, in bytes, an env var's value as the manager's
// cache keeps it for the kinds whose writes are strategic merge patches
// (Deployments, StatefulSets, DaemonSets) and for pods. Reroll reads an env
// var's name and valueFrom, never a literal value longer than its own
// triggers (STAKATER_* values are 40 characters), so a longer value is held
// as Prefix and its SHA-256 instead: ~200 Deployments with 1 MB of
// env values each no longer hold 200 MB in the cache.
const MaxValue = 1024

// Prefix starts the value the cache holds in place of a longer one.
// The SHA-256 that follows keeps two templates that differ in such a value
// apart (revert detection fingerprints cached templates).
const Prefix = "reroll-trimmed:sha256:"

// Values replaces, in every container and init container of spec,
// each env value longer than MaxValue by Prefix and the
// value's SHA-256 in hex. It is for cached copies only: a write built from
// a trimmed copy must be a patch of the difference between two trimmed
// copies (a strategic merge patch merges env lists by name, so a value that
// did not change is not in it), never the whole template.
func Values(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if v := cs[i].Env[j].Value; len(v) > MaxValue {
					sum := sha256.Sum256([]byte(v))
					cs[i].Env[j].Value = Prefix + hex.EncodeToString(sum[:])
				}
			}
		}
	}
}
