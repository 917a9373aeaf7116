package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// maxRecordBytes is the largest RecordAnnotation value Reroll writes with
// one digest per key: 64 KiB, a quarter of the 256 KiB that Kubernetes
// allows for all of an object's annotations together, so that the record
// leaves room for everyone else's. A larger record (an envFrom of an object
// with thousands of keys) falls back to one digest per object.
const maxRecordBytes = 64 << 10

// objectDigestKey is the single pseudo-key of an object in a record that
// fell back to one digest per object. No ConfigMap or Secret key can be "*"
// (keys match [-._a-zA-Z0-9]+).
const objectDigestKey = "*"

// ReasonRecordTooLarge is a Warning Event: the record of every consumed key
// would pass maxRecordBytes, so Reroll records one digest per object; a
// change then names the object, not its keys.
const ReasonRecordTooLarge = "RecordTooLarge"

// bounded decides the record to write and the two states to compare: the
// current state as is when its record fits maxRecordBytes; otherwise, and
// whenever the previous record had fallen back, both states with one digest
// per object, so that the comparison is like for like.
func bounded(cur, prev Record) (record, curCmp, prevCmp Record, tooLarge bool) {
	tooLarge = len(cur.String()) > maxRecordBytes
	record, curCmp, prevCmp = cur, cur, prev
	if tooLarge {
		record = perObject(cur)
	}
	if tooLarge || prev.perObject() {
		curCmp, prevCmp = perObject(cur), perObject(prev)
	}
	return record, curCmp, prevCmp, tooLarge
}

// perObject reports whether o is a record with one digest per object.
func (o Record) perObject() bool {
	for _, keys := range o {
		if _, ok := keys[objectDigestKey]; ok && len(keys) == 1 {
			return true
		}
	}
	return false
}

// perObject returns o with each object's key digests replaced by one digest
// of them all (the first digestLen hex characters of the SHA-256 of the
// sorted "key=digest" lines); entries already in that form are kept, and a
// missing object stays null. nil stays nil.
func perObject(o Record) Record {
	if o == nil {
		return nil
	}
	out := make(Record, len(o))
	for id, keys := range o {
		if keys == nil {
			out[id] = nil
			continue
		}
		if _, ok := keys[objectDigestKey]; ok && len(keys) == 1 {
			out[id] = keys
			continue
		}
		lines := make([]string, 0, len(keys))
		for k, d := range keys {
			lines = append(lines, k+"="+d)
		}
		sort.Strings(lines)
		sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[id] = map[string]string{objectDigestKey: short(hex.EncodeToString(sum[:]))}
	}
	return out
}
