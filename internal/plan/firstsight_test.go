package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/reference"
)

// at is a time in whole seconds after the test's epoch t0.
func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func TestAfter(t *testing.T) {
	cases := map[string]struct {
		e, since  Happened  // the event, and the workload's last template write
		installed time.Time // Reroll's installation time
		want      bool
	}{
		"a later second":                                {e: Happened{At: at(12)}, since: Happened{At: at(11)}, installed: at(1), want: true},
		"an earlier second":                             {e: Happened{At: at(10)}, since: Happened{At: at(11)}, installed: at(1), want: false},
		"the workload's second counts as after":         {e: Happened{At: at(11)}, since: Happened{At: at(11)}, installed: at(1), want: true},
		"the installation's second counts as after":     {e: Happened{At: at(11)}, since: Happened{At: at(5)}, installed: at(11), want: true},
		"the second before the installation is before":  {e: Happened{At: at(10)}, since: Happened{At: at(5)}, installed: at(11), want: false},
		"before the installation":                       {e: Happened{At: at(11)}, since: Happened{At: at(5)}, installed: at(20), want: false},
		"revisions order within a second: before":       {e: Happened{At: at(11), ResourceVersion: 99}, since: Happened{At: at(11), ResourceVersion: 100}, installed: at(1), want: false},
		"revisions order within a second: after":        {e: Happened{At: at(11), ResourceVersion: 101}, since: Happened{At: at(11), ResourceVersion: 100}, installed: at(1), want: true},
		"an unknown revision falls back to seconds":     {e: Happened{At: at(11)}, since: Happened{At: at(11), ResourceVersion: 100}, installed: at(1), want: true},
		"a later second wins over no workload revision": {e: Happened{At: at(12), ResourceVersion: 5}, since: Happened{At: at(11)}, installed: at(1), want: true},
		"nothing happened":                              {e: Happened{}, since: Happened{At: at(11)}, installed: at(1), want: false},
		"no installation time turns the rule off":       {e: Happened{At: at(12)}, since: Happened{At: at(11)}, want: false},
		"no workload time":                              {e: Happened{At: at(12)}, installed: at(1), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := after(tc.e, tc.since, tc.installed); got != tc.want {
				t.Errorf("after(%+v, %+v, %s) = %t, want %t", tc.e, tc.since, tc.installed, got, tc.want)
			}
		})
	}
}

// deleting is a memory Source that also remembers deletions.
type deleting struct {
	memory
	deleted map[string]Happened
}

func (d deleting) Deleted(kind reference.Kind, namespace, name string) (Happened, bool) {
	h, ok := d.deleted[string(kind)+"/"+namespace+"/"+name]
	return h, ok
}

// since returns an object whose data is data, created at created and
// changed at changed (0: never), both in seconds after t0, at revision rv.
func since(data map[string]string, created, changed int, rv uint64) Object {
	o := obj(data, nil, "1")
	o.History.Created = Happened{At: at(created), ResourceVersion: rv}
	if changed != 0 {
		o.History.Changed = Happened{At: at(changed), ResourceVersion: rv}
	}
	return o
}

func TestDecide_FirstSight(t *testing.T) {
	cases := map[string]struct {
		opts    func(*Options) // changes to the options (InstalledAt: at(1))
		record  string         // the workload's record; "" for none
		key     string         // the record's key annotation
		since   Happened       // when the workload's template was last written
		src     Source         // the objects now
		want    Outcome        // the outcome
		changes string         // the change's summary
	}{
		"created together, never changed: recorded": {
			since: Happened{At: at(10)},
			src:   memory{cm("cfg"): since(map[string]string{"a": "1"}, 10, 0, 5)},
			want:  FirstSight,
		},
		"changed in the workload's second, before its first sight: rolled": {
			since:   Happened{At: at(10)},
			src:     memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 10, 7)},
			want:    Roll,
			changes: "ConfigMap/cfg changed",
		},
		"changed in its second but at a revision before the workload's creation: recorded": {
			since: Happened{At: at(10), ResourceVersion: 8},
			src:   memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 10, 7)},
			want:  FirstSight,
		},
		"changed after the workload, seen by revision: rolled": {
			since:   Happened{At: at(10), ResourceVersion: 8},
			src:     memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 10, 9)},
			want:    Roll,
			changes: "ConfigMap/cfg changed",
		},
		"changed before the workload's template was last written: recorded": {
			since: Happened{At: at(30)},
			src:   memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 20, 0)},
			want:  FirstSight,
		},
		"changed before the installation: recorded (installing rolls nothing)": {
			opts:  func(o *Options) { o.InstalledAt = at(50) },
			since: Happened{At: at(10)},
			src:   memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 40, 0)},
			want:  FirstSight,
		},
		"changed after the installation, during the recording of a large cluster: rolled": {
			opts:    func(o *Options) { o.InstalledAt = at(50) },
			since:   Happened{At: at(10)},
			src:     memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 60, 0)},
			want:    Roll,
			changes: "ConfigMap/cfg changed",
		},
		"without an installation time, first sight only records": {
			opts:  func(o *Options) { o.InstalledAt = time.Time{} },
			since: Happened{At: at(10)},
			src:   memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 60, 0)},
			want:  FirstSight,
		},
		"a record made under another key: recorded again, not rolled": {
			record: `{"ConfigMap/cfg":{"a":"6b86b273ff34fce1"}}`,
			key:    "deadbeef",
			since:  Happened{At: at(10)},
			src:    memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 60, 0)},
			want:   FirstSight,
		},
		"a damaged record: recorded again, not rolled": {
			record: `{"ConfigMap/cfg":`,
			since:  Happened{At: at(10)},
			src:    memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 60, 0)},
			want:   DamagedRecord,
		},
		"created after the workload, --reload-on-create off: recorded, held": {
			since: Happened{At: at(10), ResourceVersion: 8},
			src:   memory{cm("cfg"): since(map[string]string{"a": "1"}, 10, 0, 9)},
			want:  FirstSight,
		},
		"created after the workload, --reload-on-create: rolled": {
			opts:    func(o *Options) { o.ReloadOnCreate = true },
			since:   Happened{At: at(10), ResourceVersion: 8},
			src:     memory{cm("cfg"): since(map[string]string{"a": "1"}, 10, 0, 9)},
			want:    Roll,
			changes: "ConfigMap/cfg was created",
		},
		"created just before the workload, --reload-on-create: recorded": {
			opts:  func(o *Options) { o.ReloadOnCreate = true },
			since: Happened{At: at(10), ResourceVersion: 8},
			src:   memory{cm("cfg"): since(map[string]string{"a": "1"}, 10, 0, 7)},
			want:  FirstSight,
		},
		"deleted after the workload, --reload-on-delete: rolled": {
			opts:    func(o *Options) { o.ReloadOnDelete = true },
			since:   Happened{At: at(10), ResourceVersion: 8},
			src:     deleting{memory: memory{}, deleted: map[string]Happened{cm("cfg"): {At: at(10), ResourceVersion: 9}}},
			want:    Roll,
			changes: "ConfigMap/cfg was deleted",
		},
		"deleted after the workload, --reload-on-delete off: recorded": {
			since: Happened{At: at(10), ResourceVersion: 8},
			src:   deleting{memory: memory{}, deleted: map[string]Happened{cm("cfg"): {At: at(10), ResourceVersion: 9}}},
			want:  FirstSight,
		},
		"deleted before the workload, --reload-on-delete: recorded": {
			opts:  func(o *Options) { o.ReloadOnDelete = true },
			since: Happened{At: at(10), ResourceVersion: 8},
			src:   deleting{memory: memory{}, deleted: map[string]Happened{cm("cfg"): {At: at(10), ResourceVersion: 6}}},
			want:  FirstSight,
		},
		"recorded absent, then seen changed after the workload (the store lagged at first sight): rolled": {
			record:  `{"ConfigMap/cfg":null}`,
			since:   Happened{At: at(10), ResourceVersion: 8},
			src:     memory{cm("cfg"): since(map[string]string{"a": "2"}, 10, 10, 9)},
			want:    Roll,
			changes: "ConfigMap/cfg changed",
		},
		"recorded absent, then seen changed before the workload's template was last written: a creation, held": {
			record: `{"ConfigMap/cfg":null}`,
			since:  Happened{At: at(30)},
			src:    memory{cm("cfg"): since(map[string]string{"a": "2"}, 9, 20, 0)},
			want:   Skipped,
		},
		"recorded absent, then created and never changed: a creation, held": {
			record: `{"ConfigMap/cfg":null}`,
			since:  Happened{At: at(10), ResourceVersion: 8},
			src:    memory{cm("cfg"): since(map[string]string{"a": "1"}, 12, 0, 9)},
			want:   Skipped,
		},
		"recorded absent, then created and never changed, --reload-on-create: rolled as a creation": {
			opts:    func(o *Options) { o.ReloadOnCreate = true },
			record:  `{"ConfigMap/cfg":null}`,
			since:   Happened{At: at(10), ResourceVersion: 8},
			src:     memory{cm("cfg"): since(map[string]string{"a": "1"}, 12, 0, 9)},
			want:    Roll,
			changes: "ConfigMap/cfg was created",
		},
		"missing, no deletion known: recorded": {
			opts:  func(o *Options) { o.ReloadOnDelete = true },
			since: Happened{At: at(10)},
			src:   memory{},
			want:  FirstSight,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.InstalledAt = at(1)
			if tc.opts != nil {
				tc.opts(&o)
			}
			annotations := map[string]string{"reroll.dev/auto": "true"}
			if tc.record != "" {
				annotations[RecordAnnotation] = tc.record
				annotations[KeyAnnotation] = tc.key
				if tc.key == "" {
					// A record made under the current key.
					annotations[KeyAnnotation] = o.Key.ID()
				}
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "w", Annotations: annotations,
				Template: template([]string{"cfg"}), Now: now, Since: tc.since}
			p, err := DecideChange(o, in, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tc.want {
				t.Errorf("outcome = %s, want %s", p.Outcome, tc.want)
			}
			if got := p.Change.Summary(); len(p.Changes) > 0 && got != tc.changes || len(p.Changes) == 0 && tc.changes != "" {
				t.Errorf("changes = %q, want %q", got, tc.changes)
			}
			if p.Annotations[RecordAnnotation] == "" {
				t.Errorf("no record written")
			}
		})
	}
}

func TestWrittenAt(t *testing.T) {
	entry := func(manager, subresource string, seconds int, fields string) metav1.ManagedFieldsEntry {
		tm := metav1.NewTime(at(seconds))
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			Time: &tm, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	const spec = `{"f:spec":{"f:template":{}}}`
	cases := map[string]struct {
		entries []metav1.ManagedFieldsEntry // the workload's managedFields
		want    time.Time
	}{
		"no entries: the creation":              {want: at(10)},
		"the creator's entry":                   {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 10, spec)}, want: at(10)},
		"a later template write":                {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 10, spec), entry("argocd", "", 30, spec)}, want: at(30)},
		"an opt-in annotation written later":    {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 10, spec), entry("kubectl-annotate", "", 40, `{"f:metadata":{"f:annotations":{"f:reroll.dev/auto":{}}}}`)}, want: at(40)},
		"the status subresource does not count": {entries: []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "status", 50, `{"f:status":{}}`)}, want: at(10)},
		"the Deployment controller's revision annotation does not count": {
			entries: []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", 50, `{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`)}, want: at(10)},
		"a label-only manager does not count": {entries: []metav1.ManagedFieldsEntry{entry("labeler", "", 50, `{"f:metadata":{"f:labels":{"f:team":{}}}}`)}, want: at(10)},
		"Reroll's own writes do not count":    {entries: []metav1.ManagedFieldsEntry{entry("reroll", "", 50, spec)}, want: at(10)},
		"the cache's summary":                 {entries: []metav1.ManagedFieldsEntry{entry(SummaryManager, "", 20, `{}`)}, want: at(20)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(10)), ManagedFields: tc.entries}
			if got := WrittenAt(obj); !got.Equal(tc.want) {
				t.Errorf("WrittenAt = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestDecide_DeferRecord: with Options.DeferRecord, a workload without a
// record gets none written until a rollout writes it; the caller keeps
// Plan.Record as its baseline, compared with as a record, and is told to
// keep it durably only when the first-sight rule would otherwise roll,
// after a restart, for a change the workload does not read.
func TestDecide_DeferRecord(t *testing.T) {
	// The workload reads key "password" of Secret db; the baseline is the
	// record of db at "password: 1, user: 1".
	base := map[string]string{"password": "1", "user": "1"}
	baselineOf := func(t *testing.T) string {
		o := defaults()
		o.InstalledAt, o.DeferRecord = at(1), true
		in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "w", Annotations: map[string]string{"reroll.dev/auto": "true"},
			Template: template(nil, secretKey("db", "password")), Now: now, Since: Happened{At: at(10)}}
		p, err := DecideChange(o, in, memory{secret("db"): since(base, 5, 0, 3)})
		if err != nil {
			t.Fatal(err)
		}
		return p.Record.String()
	}
	cases := map[string]struct {
		defer_   bool   // Options.DeferRecord
		record   bool   // the workload carries the baseline as its own record
		baseline bool   // Input.Baseline is the baseline
		data     Object // Secret db now
		// want is the outcome; written whether the record goes on the
		// workload; deferred and needed the plan's Deferred and
		// BaselineNeeded.
		want                      Outcome
		written, deferred, needed bool
	}{
		"first sight, nothing changed since the installation: nothing written, the record kept as baseline": {
			defer_: true, data: since(base, 5, 0, 3), want: FirstSight, deferred: true},
		"first sight without DeferRecord: the record written, as before": {
			data: since(base, 5, 0, 3), want: FirstSight, written: true},
		"first sight, the read key changed after the installation: rolled, the record written": {
			defer_: true, data: since(map[string]string{"password": "2", "user": "1"}, 5, 20, 9), want: Roll, written: true},
		"baseline, the read key changed: rolled, the record written": {
			defer_: true, baseline: true, data: since(map[string]string{"password": "2", "user": "1"}, 5, 20, 9), want: Roll, written: true},
		"baseline, an unread key changed after the installation: unchanged, the baseline needed durably": {
			defer_: true, baseline: true, data: since(map[string]string{"password": "1", "user": "2"}, 5, 20, 9), want: Unchanged, deferred: true, needed: true},
		"baseline, nothing changed since the installation: unchanged, nothing needed": {
			defer_: true, baseline: true, data: since(base, 5, 0, 3), want: Unchanged, deferred: true},
		"baseline, an unread key changed before the workload's last write: nothing needed (the rule would not roll)": {
			defer_: true, baseline: true, data: since(map[string]string{"password": "1", "user": "2"}, 5, 8, 9), want: Unchanged, deferred: true},
		"the workload's own record: compared as ever, nothing deferred": {
			defer_: true, record: true, data: since(map[string]string{"password": "1", "user": "2"}, 5, 20, 9), want: Unchanged, written: true},
		"a damaged baseline counts as none: the first-sight rule decides": {
			defer_: true, data: since(map[string]string{"password": "1", "user": "2"}, 5, 20, 9), want: Roll, written: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.InstalledAt, o.DeferRecord = at(1), tc.defer_
			annotations := map[string]string{"reroll.dev/auto": "true"}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "w", Annotations: annotations,
				Template: template(nil, secretKey("db", "password")), Now: now, Since: Happened{At: at(10)}}
			switch {
			case tc.record:
				annotations[RecordAnnotation], annotations[KeyAnnotation] = baselineOf(t), o.Key.ID()
			case tc.baseline:
				in.Baseline = baselineOf(t)
			case name == "a damaged baseline counts as none: the first-sight rule decides":
				in.Baseline = `{"Secret/db":`
			}
			p, err := DecideChange(o, in, memory{secret("db"): tc.data})
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tc.want {
				t.Errorf("outcome = %s, want %s", p.Outcome, tc.want)
			}
			if _, got := p.Annotations[RecordAnnotation]; got != tc.written {
				t.Errorf("record written = %t, want %t", got, tc.written)
			}
			if _, got := p.Annotations[KeyAnnotation]; got != tc.written {
				t.Errorf("key annotation written = %t, want %t", got, tc.written)
			}
			if p.Deferred != tc.deferred || p.BaselineNeeded != tc.needed {
				t.Errorf("deferred, needed = %t, %t; want %t, %t", p.Deferred, p.BaselineNeeded, tc.deferred, tc.needed)
			}
			if p.Deferred && p.Record.String() == "" {
				t.Errorf("deferred without a record to keep")
			}
		})
	}
}
