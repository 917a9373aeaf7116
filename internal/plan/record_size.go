package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/reroll/reroll/internal/reference"
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
// would pass maxRecordBytes or the room the workload's other annotations
// leave, so Reroll records one digest per object (a change then names the
// object, not its keys), or, when even that does not fit, one digest for all
// objects (a change then names no object). The note says which.
const ReasonRecordTooLarge = "RecordTooLarge"

// maxAnnotationsBytes is what Kubernetes allows for all of an object's
// annotations together, keys and values (TotalAnnotationSizeLimitB).
const maxAnnotationsBytes = 256 << 10

// annotationsReserve is kept free for Reroll's other annotations beside the
// record (its key ID, pending, rolled-at, paused-at, eviction state).
const annotationsReserve = 4 << 10

// allObjectsID is the single reference ID of a record that fell back to one
// digest for all objects; no reference ID is "*" ("<Kind>/<name>").
const allObjectsID = "*"

// recordLevel is how much a record holds, from most to least.
type recordLevel int

const (
	// perKeyLevel: one digest per consumed key.
	perKeyLevel recordLevel = iota
	// perObjectLevel: one digest per object (objectDigestKey).
	perObjectLevel
	// allObjectsLevel: one digest for all objects (allObjectsID).
	allObjectsLevel
)

// recordRoom is the size RecordAnnotation's value may have on a workload
// with annotations: what Kubernetes allows for all of them, less the others
// (a kubectl last-applied-configuration can hold most of it) and
// annotationsReserve.
func recordRoom(annotations map[string]string) int {
	room := maxAnnotationsBytes - annotationsReserve - len(RecordAnnotation)
	for k, v := range annotations {
		if k != RecordAnnotation && k != KeyAnnotation {
			room -= len(k) + len(v)
		}
	}
	return room
}

// bounded decides the record to write within room bytes and the two states
// to compare: the current state as is when its record fits both room and
// maxRecordBytes; else one digest per object when that fits room; else one
// digest for all objects. Both states are compared at the coarser of the
// level written and the previous record's, so that the comparison is like
// for like. A previous record of one digest for all objects keeps that level.
// encoded is record.String(), which the size check has mostly computed
// already.
func bounded(cur, prev Record, room int) (record, curCmp, prevCmp Record, level recordLevel, encoded string) {
	var perObj Record
	switch encoded = cur.String(); {
	case len(encoded) <= min(maxRecordBytes, room):
		level = perKeyLevel
	default:
		perObj = perObject(cur)
		if encoded = perObj.String(); len(encoded) <= room {
			level = perObjectLevel
		} else {
			level = allObjectsLevel
		}
	}
	if prev.level() == allObjectsLevel {
		// Once one digest for all, always: room is computed from a cached
		// workload without its kubectl last-applied-configuration, so a
		// finer record that seems to fit may not.
		level = allObjectsLevel
	}
	switch level {
	case perKeyLevel:
		record = cur
	case perObjectLevel:
		record = perObj
	default:
		record = cur.at(level)
		encoded = record.String()
	}
	cmp := max(level, prev.level())
	return record, cur.at(cmp), prev.at(cmp), level, encoded
}

// level is the level of a recorded state; a nil or empty one is per key.
func (o Record) level() recordLevel {
	switch {
	case o.allObjects():
		return allObjectsLevel
	case o.perObject():
		return perObjectLevel
	}
	return perKeyLevel
}

// at returns o at level l, coarser or as it is; nil stays nil.
func (o Record) at(l recordLevel) Record {
	switch l {
	case perObjectLevel:
		return perObject(o)
	case allObjectsLevel:
		return allObjects(o)
	}
	return o
}

// allObjects reports whether o is a record with one digest for all objects.
func (o Record) allObjects() bool {
	keys, ok := o[allObjectsID]
	return ok && len(o) == 1 && len(keys) == 1 && keys[objectDigestKey] != ""
}

// allObjects returns o as one digest for all objects: the first digestLen
// hex characters of the SHA-256 of perObject(o)'s encoding. nil stays nil.
func allObjects(o Record) Record {
	if o == nil || o.allObjects() {
		return o
	}
	sum := sha256.Sum256([]byte(perObject(o).String()))
	return Record{allObjectsID: {objectDigestKey: short(hex.EncodeToString(sum[:]))}}
}

// allObjectsDiff is the change of two states recorded with one digest for
// all objects: none when they are equal (or nothing was recorded), else one
// Diff naming no object (Name "*"), of the kind of the first reference.
func allObjectsDiff(refs []reference.Reference, prev, cur Record) []Diff {
	if prev == nil || prev[allObjectsID][objectDigestKey] == cur[allObjectsID][objectDigestKey] {
		return nil
	}
	kind := reference.ConfigMap
	if len(refs) > 0 {
		kind = refs[0].Kind
	}
	return []Diff{{Ref: reference.Reference{Kind: kind, Name: allObjectsID, All: true}, Keys: []string{objectDigestKey}}}
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
