package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/reroll/reroll/internal/reference"
)

// RecordAnnotation is the workload metadata annotation where Reroll records
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
const RecordAnnotation = "reroll.dev/observed"

// ManagedLabel is the workload metadata label Reroll keeps on every workload
// it manages while the admission webhook is enabled; the webhook's
// objectSelector selects on it. Labels on a workload's metadata roll nothing.
const ManagedLabel = "reroll.dev/managed"

// KeyAnnotation is the workload metadata annotation, beside
// RecordAnnotation, that names the installation key the record's digests
// were made under (digest.Key.ID, 8 hex characters; absent for the zero key
// and for records of Reroll versions before keyed digests).
const KeyAnnotation = "reroll.dev/observed-key"

// digestLen is how many hex characters of a key's SHA-256 are recorded: 64
// bits, far more than enough to tell two versions of one value apart.
const digestLen = 16

// Record maps a reference ID ("ConfigMap/cfg") to the digests of its
// consumed keys; a nil map means the object did not exist. It is the parsed
// value of RecordAnnotation.
type Record map[string]map[string]string

// ParseRecord reads RecordAnnotation's value. An empty value means nothing
// was recorded yet (nil, no error); a value that is not the JSON of a Record
// is an error naming the annotation.
func ParseRecord(v string) (Record, error) {
	if v == "" {
		return nil, nil
	}
	o, err := parseRecord(v)
	if err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", RecordAnnotation, err)
	}
	if o == nil {
		o = Record{}
	}
	return o, nil
}

// String encodes o for RecordAnnotation; map keys are sorted, so equal
// states encode equally.
func (o Record) String() string {
	return string(appendRecord(make([]byte, 0, o.encodedSize()), o))
}

// ConfigHash is the value of the annotations strategy's trigger
// (reroll.dev/config-hash): the lowercase hex SHA-256 of String.
func (o Record) ConfigHash() string {
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

// Diff is what happened to one selected reference between the record and
// now.
type Diff struct {
	// Ref is the reference as selected.
	Ref reference.Reference
	// Created and Deleted are set when the object appeared or disappeared.
	Created, Deleted bool
	// Keys lists the consumed keys whose value changed, appeared or
	// disappeared, sorted; WrittenKey alone in pod-reloader's dialect.
	Keys []string
	// ReloaderSHA1 is Reloader's SHA-1 of the object's data now, the SHA-1
	// of nothing for a deleted object.
	ReloaderSHA1 string
}

// diff returns the changes from prev to cur for the references in refs.
// A reference that prev does not hold is new to the workload (its pod
// template changed, which rolls the pods already) and yields no change.
func diff(refs []reference.Reference, prev, cur Record) []Diff {
	var out []Diff
	for _, ref := range refs {
		before, had := prev[ref.ID()]
		if !had {
			continue
		}
		after := cur[ref.ID()]
		switch {
		case before == nil && after == nil:
		case before == nil:
			out = append(out, Diff{Ref: ref, Created: true})
		case after == nil:
			out = append(out, Diff{Ref: ref, Deleted: true})
		default:
			if keys := changedKeys(ref, before, after); len(keys) > 0 {
				out = append(out, Diff{Ref: ref, Keys: keys})
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
