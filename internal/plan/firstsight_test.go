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
			p, err := Decide(o, in, tc.src)
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
