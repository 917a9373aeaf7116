package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/reroll/reroll/internal/reference"
)

// ObservedAnnotation is the workload metadata annotation where Reroll records
// what it last saw of the data the workload consumes. Keeping it on the
// workload, not in memory, is what lets a restarted Reroll roll exactly the
// changes it missed, and lets first sight record state without touching the
// pod template (metadata changes roll nothing).
//
// The value is JSON: {"<Kind>/<name>": {"<key>": "<digest>"}}, where a digest
// is the first 16 hex characters of the HMAC-SHA-256 of the value under the
// installation key named by KeyAnnotation, "" for a
// consumed key the object does not have, and null in place of the key map
// for an object that does not exist.
const ObservedAnnotation = "reroll.dev/observed"

// KeyAnnotation is the workload metadata annotation, beside
// ObservedAnnotation, that names the installation key the record's digests
// were made under (digest.Key.ID, 8 hex characters; absent for the zero key
// and for records of Reroll versions before keyed digests).
const KeyAnnotation = "reroll.dev/observed-key"

// digestLen is how many hex characters of a key's SHA-256 are recorded: 64
// bits, far more than enough to tell two versions of one value apart.
const digestLen = 16

// observed maps a reference ID to the digests of its consumed keys; a nil
// map means the object did not exist.
type observed map[string]map[string]string

// parseObserved reads ObservedAnnotation's value. An empty value means
// nothing was recorded yet (nil, no error).
func parseObserved(v string) (observed, error) {
	if v == "" {
		return nil, nil
	}
	var o observed
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", ObservedAnnotation, err)
	}
	if o == nil {
		o = observed{}
	}
	return o, nil
}

// String encodes o for ObservedAnnotation; map keys are sorted, so equal
// states encode equally.
func (o observed) String() string {
	b, _ := json.Marshal(o) // a map of strings always encodes
	return string(b)
}

// configHash is the value of the annotations strategy's trigger: the hex
// SHA-256 of the canonical encoding of the state.
func (o observed) configHash() string {
	sum := sha256.Sum256([]byte(o.String()))
	return hex.EncodeToString(sum[:])
}

// observe returns the recorded form of one reference given the full digests
// of the object's keys (nil when the object does not exist).
func observe(ref reference.Reference, keys map[string]string) map[string]string {
	if keys == nil {
		return nil
	}
	out := map[string]string{}
	if ref.All {
		for k, d := range keys {
			out[k] = short(d)
		}
		return out
	}
	for _, k := range ref.Keys {
		out[k] = short(keys[k])
	}
	return out
}

func short(d string) string {
	if len(d) > digestLen {
		return d[:digestLen]
	}
	return d
}

// change is what happened to one reference between two states.
type change struct {
	ref reference.Reference
	// created and deleted are set when the object appeared or disappeared.
	created, deleted bool
	// keys lists the consumed keys whose value changed, appeared or
	// disappeared, sorted.
	keys []string
}

func (c change) String() string {
	switch {
	case c.created:
		return c.ref.ID() + " was created"
	case c.deleted:
		return c.ref.ID() + " was deleted"
	}
	if len(c.keys) == 1 && c.keys[0] == writtenKey {
		return c.ref.ID() + " was written"
	}
	return fmt.Sprintf("%s changed keys %s", c.ref.ID(), strings.Join(c.keys, ","))
}

// diff returns the changes from prev to cur for the references in refs.
// A reference that prev does not hold is new to the workload (its pod
// template changed, which rolls the pods already) and yields no change.
func diff(refs []reference.Reference, prev, cur observed) []change {
	var out []change
	for _, ref := range refs {
		before, had := prev[ref.ID()]
		if !had {
			continue
		}
		after := cur[ref.ID()]
		switch {
		case before == nil && after == nil:
		case before == nil:
			out = append(out, change{ref: ref, created: true})
		case after == nil:
			out = append(out, change{ref: ref, deleted: true})
		default:
			if keys := changedKeys(ref, before, after); len(keys) > 0 {
				out = append(out, change{ref: ref, keys: keys})
			}
		}
	}
	return out
}

// changedKeys returns the sorted consumed keys whose digest differs between
// before and after. A whole-object consumer reads every key, so keys added or
// removed count. A key-level consumer counts only keys it consumed before as
// well: a key it newly consumes came with a pod template change, which rolls
// the pods without Reroll.
func changedKeys(ref reference.Reference, before, after map[string]string) []string {
	var keys []string
	if ref.All {
		for k, v := range before {
			if w, ok := after[k]; !ok || w != v {
				keys = append(keys, k)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				keys = append(keys, k)
			}
		}
	} else if d, ok := before[objectDigestKey]; ok && len(before) == 1 {
		// One digest per object (bounded): any consumed key may have changed.
		if after[objectDigestKey] != d {
			keys = append(keys, objectDigestKey)
		}
	} else {
		for _, k := range ref.Keys {
			if v, ok := before[k]; ok && after[k] != v {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
