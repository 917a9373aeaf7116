package pingc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/reroll/reroll/internal/digest"
)

// Annotations of the rotation receipt, on a copy: the record (JSON of
// Record) and its keyed signature (digest.Key.StateMAC of the copy's UID,
// AnnotationRotation and the record), so that a tenant who may write the
// copy can neither forge a convergence nor move a record to another copy.
// A record that does not verify is treated as absent.
const (
	AnnotationRotation          = "reroll.dev/rotation"
	AnnotationRotationSignature = "reroll.dev/rotation-signature"
)

// Record is the state of one previous version's rotation, kept on its
// copy: when the source stopped holding that content, how many pods and
// workloads were on it then, and when the last pod left it. A copy
// without a record is the current version, or a previous one not seen as
// such yet.
type Record struct {
	// Since is when the source stopped holding the copy's content: the
	// source's data change that Reroll saw, or, when it saw none, the
	// time it first found the copy superseded. UTC, whole seconds.
	Since time.Time `json:"since"`
	// Pods and Workloads are the pods that named the copy, and the
	// workloads those pods belong to, when Reroll first found it
	// superseded.
	Pods      int `json:"pods"`
	Workloads int `json:"workloads"`
	// Converged is when Reroll found no pod naming the copy any more; zero
	// until then.
	Converged time.Time `json:"converged,omitzero"`
}

// Encode returns the record's annotation value.
func (r Record) Encode() string {
	b, _ := json.Marshal(r) // a struct of times and ints
	return string(b)
}

// ReadRecord returns the record that the annotations of the copy uid
// hold, and whether one is there and its signature verifies under k.
func ReadRecord(k digest.Key, uid string, annotations map[string]string) (Record, bool) {
	v, ok := annotations[AnnotationRotation]
	if !ok {
		return Record{}, false
	}
	if valid, _ := k.VerifyStateMAC(uid, AnnotationRotation, v, annotations[AnnotationRotationSignature]); !valid {
		return Record{}, false
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return Record{}, false
	}
	return r, true
}

// SignRecord returns the annotations that record r on the copy uid.
func SignRecord(k digest.Key, uid string, r Record) map[string]string {
	v := r.Encode()
	return map[string]string{AnnotationRotation: v, AnnotationRotationSignature: k.StateMAC(uid, AnnotationRotation, v)}
}

// Version is one copy as the rotation receipt sees it.
type Version struct {
	// Copy is the copy (signed: unsigned copies are no version of
	// Reroll's).
	Copy Copy
	// Source is the source's name; SourceExists whether it exists now.
	Source       string
	SourceExists bool
	// Current is true when the source holds the copy's content now (the
	// copy's name is the one pin.Name gives the source's content).
	Current bool
	// SourceChanged is the time of the source's latest data change, zero
	// when unknown.
	SourceChanged time.Time
	// Record is the copy's verified record; HasRecord whether there is one.
	Record    Record
	HasRecord bool
	// Pods are the pods naming the copy now; Workloads the workloads
	// those pods belong to (their controller, a ReplicaSet's owner for
	// its pods).
	Pods, Workloads int
}

// Step is what the receipt does to one copy.
type Step string

// The receipt's steps.
const (
	// StepStart records that the copy is a previous version (Record
	// without Converged).
	StepStart Step = "Start"
	// StepConverge records Converged, then emits the Converged Event on
	// the source and counts it in the metrics.
	StepConverge Step = "Converge"
	// StepClear removes the record of a copy whose content the source
	// holds again: its next supersession is a new rotation.
	StepClear Step = "Clear"
)

// Write is one record to write on a copy.
type Write struct {
	Version Version
	Step    Step
	// Record is the record to write (none for StepClear).
	Record Record
}

// DecideReceipts returns the records to write on versions at now, and
// whether some previous version still has pods (the namespace must be
// looked at again). A version whose source is gone is no rotation: it is
// left alone. Pure.
func DecideReceipts(versions []Version, now time.Time) (writes []Write, pending bool) {
	now = now.UTC().Truncate(time.Second)
	for _, v := range versions {
		switch {
		case !v.Copy.Signed || v.Copy.Deleting || !v.SourceExists:
			continue
		case v.Current:
			if v.HasRecord {
				writes = append(writes, Write{Version: v, Step: StepClear})
			}
			continue
		case v.HasRecord && !v.Record.Converged.IsZero():
			continue
		}
		r := v.Record
		if !v.HasRecord {
			r = Record{Since: since(v, now), Pods: v.Pods, Workloads: v.Workloads}
		}
		if v.Pods > 0 {
			pending = true
			if !v.HasRecord {
				writes = append(writes, Write{Version: v, Step: StepStart, Record: r})
			}
			continue
		}
		r.Converged = now
		writes = append(writes, Write{Version: v, Step: StepConverge, Record: r})
	}
	return writes, pending
}

// since is when v's source stopped holding its content: the source's
// latest data change when it is after the copy was made (the copy was
// made for the content before it), else now.
func since(v Version, now time.Time) time.Time {
	if c := v.SourceChanged.UTC().Truncate(time.Second); !c.IsZero() && !c.Before(v.Copy.Created.UTC().Truncate(time.Second)) && !c.After(now) {
		return c
	}
	return now
}

// Message is the Converged Event's message for the copy kind/name of a
// source, by record r.
func Message(c Copy, r Record) string {
	took := r.Converged.Sub(r.Since).Round(time.Second)
	return fmt.Sprintf("No pod uses the previous version %s (%s) any more: %d workload(s) and %d pod(s) moved off it in %s",
		c.Name, c.Kind, r.Workloads, r.Pods, took)
}
