package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reroll/reroll/internal/digest"
)

// Record is a workload's part of its change sets, the value of
// MemberAnnotation (JSON). Times are UTC, to the second.
type Record struct {
	// Sets are the IDs of the change sets the workload rolls (or waits to
	// roll) for, sorted.
	Sets []string `json:"sets"`
	// Place and Wave are the workload's Position when it joined: its
	// Namespace's place in the order and its own wave.
	Place int `json:"place,omitempty"`
	Wave  int `json:"wave,omitempty"`
	// Objects name the changed objects it reads, "Kind/namespace/name",
	// sorted: where a halt's Events go.
	Objects []string `json:"objects,omitempty"`
	// Seen is when it joined; Rolled when its rollout started; Healthy when
	// its status first reported the rollout complete and healthy; Failed is
	// the signal of a failed rollout.
	Seen    time.Time `json:"seen,omitzero"`
	Rolled  time.Time `json:"rolled,omitzero"`
	Healthy time.Time `json:"healthy,omitzero"`
	Failed  string    `json:"failed,omitempty"`
	// Halted, on a workload held by a halt (HoldHalted), is when that halt
	// tripped: the workload itself keeps it, signed, so a halt that could
	// not be recorded yet still holds it after a restart, even once the
	// failures it was derived from are gone (Decide).
	Halted time.Time `json:"halted,omitzero"`
}

// maxRecordBytes bounds a MemberAnnotation value read: a tenant with edit
// rights on the workload can write anything there.
const maxRecordBytes = 8 << 10

// ParseRecord reads MemberAnnotation's value; "" is no record. A value that
// is too long or not a Record is an error (the caller replaces it).
func ParseRecord(v string) (Record, error) {
	var r Record
	if v == "" {
		return r, nil
	}
	if len(v) > maxRecordBytes {
		return Record{}, fmt.Errorf("annotation %s is longer than %d bytes", MemberAnnotation, maxRecordBytes)
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return Record{}, fmt.Errorf("annotation %s is not valid JSON: %w", MemberAnnotation, err)
	}
	return r, nil
}

// String encodes r for MemberAnnotation.
func (r Record) String() string {
	b, _ := json.Marshal(r) // strings, ints and times always encode
	return string(b)
}

// Equal reports whether r and o encode alike.
func (r Record) Equal(o Record) bool { return r.String() == o.String() }

// Of reports whether r names set id.
func (r Record) Of(id string) bool { return slices.Contains(r.Sets, id) }

// Position is the record's Position.
func (r Record) Position() Position { return Position{Place: r.Place, Wave: r.Wave} }

// Join returns the record of a workload that now takes part in sets (sorted
// IDs) at position p, reading objects: r itself when it names the same sets,
// else a fresh record (a newer content supersedes the older set).
func (r Record) Join(sets, objects []string, p Position) Record {
	if slices.Equal(r.Sets, sets) {
		return r
	}
	return Record{Sets: sets, Objects: objects, Place: p.Place, Wave: p.Wave}
}

// SetID is the ID of the change set of one object's change
// (digest.Key.ChangeSetID under the installation key k): of its kind and
// name, its content (a digest of its whole content, made in this process:
// the object's Reloader SHA-1) or "deleted", and scope (Order.Scope of the
// workload's namespace: "" where the operator lets copies across
// namespaces be one set, else the namespace). Copies of one object in the
// shared namespaces that change to the same content share it, whatever the
// key.
func SetID(k digest.Key, scope, kind, name, content string, deleted bool) string {
	if deleted {
		content = "deleted"
	}
	return k.ChangeSetID(scope, kind, name, content)
}

// Wave is the wave of a workload with annotations, in a Namespace with
// nsAnnotations: the workload's WaveAnnotation, else its Namespace's, else
// 0. A malformed value is an error and counts as 0.
func Wave(annotations, nsAnnotations map[string]string) (int, error) {
	for _, a := range []map[string]string{annotations, nsAnnotations} {
		v, ok := a[WaveAnnotation]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < -1000 || n > 1000 {
			return 0, fmt.Errorf("annotation %s: %q is not an integer from -1000 to 1000", WaveAnnotation, v)
		}
		return n, nil
	}
	return 0, nil
}

// BakeTime is the bake time of a workload with annotations in a Namespace
// with nsAnnotations: BakeTimeAnnotation on the workload, else on its
// Namespace, else def. A malformed value is an error and counts as def.
func BakeTime(annotations, nsAnnotations map[string]string, def time.Duration) (time.Duration, error) {
	for _, a := range []map[string]string{annotations, nsAnnotations} {
		v, ok := a[BakeTimeAnnotation]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || d > 24*time.Hour {
			return def, fmt.Errorf("annotation %s: %q is not a duration from 0 to 24h", BakeTimeAnnotation, v)
		}
		return d, nil
	}
	return def, nil
}

// Halt is the durable record of a halted (or resumed) change set, kept in
// a ConfigMap in Reroll's namespace under the set's ID, as JSON.
type Halt struct {
	// Halted is when the breaker tripped; zero once resumed.
	Halted time.Time `json:"halted,omitzero"`
	// Resumed is when an operator last resumed the set: failures of
	// rollouts started before it no longer count.
	Resumed time.Time `json:"resumed,omitzero"`
	// Failed names the failed workloads, "Kind/namespace/name"; Signal says
	// what failed first.
	Failed []string `json:"failed,omitempty"`
	Signal string   `json:"signal,omitempty"`
	// Objects name the changed objects, "Kind/namespace/name".
	Objects []string `json:"objects,omitempty"`
}

// Active reports whether h halts its set: it exists and was not resumed
// since.
func (h *Halt) Active() bool { return h != nil && !h.Halted.IsZero() }

// ParseHalt reads one halt record; an error names what is wrong.
func ParseHalt(v string) (*Halt, error) {
	var h Halt
	if len(v) > maxRecordBytes*8 {
		return nil, fmt.Errorf("halt record is longer than %d bytes", maxRecordBytes*8)
	}
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		return nil, fmt.Errorf("halt record is not valid JSON: %w", err)
	}
	return &h, nil
}

// String encodes h for its ConfigMap.
func (h Halt) String() string {
	b, _ := json.Marshal(h) // strings and times always encode
	return string(b)
}

// Resume returns h resumed at now: the set rolls on, and only rollouts
// started after now count towards the breaker.
func (h Halt) Resume(now time.Time) Halt {
	h.Halted = time.Time{}
	h.Resumed = now.UTC().Truncate(time.Second)
	return h
}

// Names reports whether halt record h names namespace: one of its failed
// workloads or changed objects ("Kind/namespace/name") is there. `kubectl
// reroll resume` resumes a set only for an object of a namespace its
// record names: a workload's reroll.dev/change-set is written where a
// tenant can forge it, the record where only Reroll and the operators can.
func (h *Halt) Names(namespace string) bool {
	if h == nil {
		return false
	}
	prefix := "/" + namespace + "/"
	for _, names := range [][]string{h.Failed, h.Objects} {
		for _, n := range names {
			if _, rest, ok := strings.Cut(n, "/"); ok && strings.HasPrefix("/"+rest, prefix) {
				return true
			}
		}
	}
	return false
}

// Resumable returns the IDs, sorted, of the halted sets among candidates
// (the sets a workload's record names, unverified) whose halt records name
// namespace (Names).
func Resumable(halts map[string]*Halt, candidates []string, namespace string) []string {
	var out []string
	for _, id := range candidates {
		if h := halts[id]; h.Active() && h.Names(namespace) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Bounds of a halt record as written (Bounded): its workloads, objects and
// signal come from tenants' names and their workloads' status messages.
const (
	// maxHaltNames is how many failed workloads, and how many changed
	// objects, a record names.
	maxHaltNames = 32
	// maxHaltSignal is the longest signal kept, in bytes.
	maxHaltSignal = 1 << 10
	// maxHaltName is the longest name kept ("Kind/namespace/name": a
	// namespace and a name are at most 253 bytes each).
	maxHaltName = 600
)

// Bounded returns h as written: at most 32 failed workloads and 32 objects
// (the first in order, then one entry "+N more"), names of at most 600
// bytes, a signal of at most 1 KiB. A bounded record is at most about
// 40 KiB, whatever the tenants' names and messages.
func (h Halt) Bounded() Halt {
	h.Failed = boundNames(h.Failed)
	h.Objects = boundNames(h.Objects)
	if len(h.Signal) > maxHaltSignal {
		h.Signal = strings.ToValidUTF8(h.Signal[:maxHaltSignal], "") + "..."
	}
	return h
}

func boundNames(names []string) []string {
	out := make([]string, 0, min(len(names), maxHaltNames+1))
	for i, n := range names {
		if i == maxHaltNames {
			out = append(out, fmt.Sprintf("+%d more", len(names)-maxHaltNames))
			break
		}
		if len(n) > maxHaltName {
			n = strings.ToValidUTF8(n[:maxHaltName], "")
		}
		out = append(out, n)
	}
	if len(names) == 0 {
		return names
	}
	return out
}

// LegacySetID is the ID that Reroll gave a change set before
// digest.Key.ChangeSetID (before halt records were one ConfigMap per set):
// the first 16 hex characters of the SHA-256 of the object's kind and
// name, each followed by a NUL byte, then "deleted", or each data key's
// "<key>=<digest>" followed by a NUL byte, in key order (the per-key
// digests as the store keeps them). Only to read the halt records of that
// Reroll after an upgrade (internal/halts, Translate).
func LegacySetID(kind, name string, keys map[string]string, deleted bool) string {
	h := sha256.New()
	for _, s := range []string{kind, name} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if deleted {
		h.Write([]byte("deleted"))
	} else {
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			h.Write([]byte(k + "=" + keys[k]))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
