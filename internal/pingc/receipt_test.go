package pingc

import (
	"testing"
	"time"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

func TestDecideReceipts(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 30, 0, 0, time.UTC)
	created := now.Add(-time.Hour)
	changed := now.Add(-5 * time.Minute)
	// previous is a signed copy of source "db" whose content the source no
	// longer holds, with pods pods and 2 owners.
	previous := func(pods int) Version {
		return Version{
			Copy:   Copy{Kind: reference.Secret, Name: "db-0123456789", UID: "u", Signed: true, Created: created, LastWrite: created},
			Source: "db", SourceExists: true, SourceChanged: changed, Pods: pods, Workloads: 2,
		}
	}
	with := func(v Version, r Record) Version { v.Record, v.HasRecord = r, true; return v }
	cases := map[string]struct {
		// versions are the copies of the namespace.
		versions []Version
		// steps are the steps of the writes, in order; records their records.
		steps   []Step
		records []Record
		// pending is whether a previous version still has pods.
		pending bool
	}{
		"a previous version with pods on it is recorded from the source's change, once": {
			versions: []Version{previous(3)},
			steps:    []Step{StepStart},
			records:  []Record{{Since: changed, Pods: 3, Workloads: 2}},
			pending:  true,
		},
		"a recorded previous version with pods still on it writes nothing and is looked at again": {
			versions: []Version{with(previous(1), Record{Since: changed, Pods: 3, Workloads: 2})},
			pending:  true,
		},
		"the last pod gone, the recorded version converges with the numbers recorded at the start": {
			versions: []Version{with(previous(0), Record{Since: changed, Pods: 3, Workloads: 2})},
			steps:    []Step{StepConverge},
			records:  []Record{{Since: changed, Pods: 3, Workloads: 2, Converged: now}},
		},
		"a converged version is never converged again (a restart reads the record)": {
			versions: []Version{with(previous(0), Record{Since: changed, Pods: 3, Workloads: 2, Converged: now.Add(-time.Minute)})},
		},
		"a previous version first seen without pods converges at once, from the source's change": {
			versions: []Version{previous(0)},
			steps:    []Step{StepConverge},
			records:  []Record{{Since: changed, Pods: 0, Workloads: 2, Converged: now}},
		},
		"the current version is no rotation": {
			versions: []Version{func() Version { v := previous(3); v.Current = true; return v }()},
		},
		"a version whose content the source holds again loses its record: its next supersession is a new rotation": {
			versions: []Version{func() Version {
				v := with(previous(3), Record{Since: changed, Pods: 3, Workloads: 2, Converged: now})
				v.Current = true
				return v
			}()},
			steps:   []Step{StepClear},
			records: []Record{{}},
		},
		"a version whose source is gone is no rotation": {
			versions: []Version{func() Version { v := previous(0); v.SourceExists = false; return v }()},
		},
		"a copy that a tenant made is no version": {
			versions: []Version{func() Version { v := previous(0); v.Copy.Signed = false; return v }()},
		},
		"a source change older than the copy is not its supersession: it starts when first seen": {
			versions: []Version{func() Version { v := previous(2); v.SourceChanged = created.Add(-time.Hour); return v }()},
			steps:    []Step{StepStart},
			records:  []Record{{Since: now, Pods: 2, Workloads: 2}},
			pending:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes, pending := DecideReceipts(tc.versions, now)
			if pending != tc.pending {
				t.Errorf("pending %v, want %v", pending, tc.pending)
			}
			if len(writes) != len(tc.steps) {
				t.Fatalf("writes %+v, want steps %v", writes, tc.steps)
			}
			for i, w := range writes {
				if w.Step != tc.steps[i] {
					t.Errorf("step %d is %s, want %s", i, w.Step, tc.steps[i])
				}
				if w.Record != tc.records[i] {
					t.Errorf("record %d is %+v, want %+v", i, w.Record, tc.records[i])
				}
			}
		})
	}
}

func TestReadRecord_TrustsOnlyItsOwnSignatureOnTheSameCopy(t *testing.T) {
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Since: time.Unix(1000, 0).UTC(), Pods: 3, Workloads: 1}
	a := SignRecord(k, "uid-1", r)
	got, ok := ReadRecord(k, "uid-1", a)
	if !ok || got != r {
		t.Fatalf("ReadRecord = %+v, %v; want %+v, true", got, ok, r)
	}
	if _, ok := ReadRecord(k, "uid-2", a); ok {
		t.Error("a record moved to another copy verifies")
	}
	forged := map[string]string{AnnotationRotation: Record{Since: r.Since, Converged: r.Since}.Encode(), AnnotationRotationSignature: a[AnnotationRotationSignature]}
	if _, ok := ReadRecord(k, "uid-1", forged); ok {
		t.Error("a record a tenant changed verifies")
	}
	if _, ok := ReadRecord(k, "uid-1", nil); ok {
		t.Error("no record verifies")
	}
}

func TestMessage_SaysWhatMovedAndHowLong(t *testing.T) {
	r := Record{Since: time.Unix(1000, 0), Converged: time.Unix(1090, 0), Pods: 4, Workloads: 2}
	got := Message(Copy{Kind: reference.Secret, Name: "db-0123456789"}, r)
	want := "No pod uses the previous version db-0123456789 (Secret) any more: 2 workload(s) and 4 pod(s) moved off it in 1m30s"
	if got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
}
