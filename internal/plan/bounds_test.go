package plan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/workload"
)

// A namespace of 300 ConfigMaps with 245-character names and a workload
// whose Reloader list holds 64 patterns of about 330 instructions each
// (the security review's CPU case, within the per-entry limit): matching
// every pattern against every name would cost about 1.6e9 units, so the
// plan is refused with a Warning instead of holding a worker.
func TestDecide_RefusesPatternsPastTheMatchBudget(t *testing.T) {
	key := annotation.DefaultNames().ConfigMapReload
	src := memory{}
	for i := range 300 {
		src[cm(strings.Repeat("n", 240)+"-"+strings.Repeat("0", 4-len(itoa(i)))+itoa(i))] = obj(map[string]string{"a": "1"}, nil, "1")
	}
	src[cm("app-config")] = obj(map[string]string{"a": "1"}, nil, "1")
	entries := make([]string, annotation.MaxListEntries)
	for i := range entries {
		entries[i] = "(?:.?){80}#" + strings.Repeat("b", i%10)
	}
	cases := map[string]struct {
		// list is the value of Reloader's ConfigMap list.
		list string
		// want is the outcome on first sight.
		want Outcome
	}{
		"a short pattern is matched against every name": {list: "app-.*", want: FirstSight},
		"64 costly patterns are refused":                {list: strings.Join(entries, ","), want: Refused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
				Annotations: map[string]string{key: tc.list}, Template: template(nil)}
			p, err := DecideChange(defaults(), in, src)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tc.want {
				t.Fatalf("outcome = %s, want %s", p.Outcome, tc.want)
			}
			if tc.want == FirstSight {
				if len(p.References) != 1 || p.References[0].Name != "app-config" {
					t.Errorf("references = %v", p.References)
				}
				return
			}
			if len(p.Annotations) != 0 || len(p.Labels) != 0 {
				t.Errorf("a refused plan writes %v %v", p.Annotations, p.Labels)
			}
			if len(p.Warnings) != 1 || p.Warnings[0].Reason != ReasonInvalidAnnotation || !strings.Contains(p.Warnings[0].Note, key) {
				t.Errorf("warnings = %+v", p.Warnings)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The security review: a Deployment applied with kubectl, referencing 3,000
// ConfigMaps, whose last-applied-configuration alone is 171 KB. Its record
// could never be written (the API server refused the patch as too long),
// so it never rolled. Now it records one digest for all objects, says so,
// and rolls on a change.
func TestDecide_RecordFitsBesideALargeAnnotation(t *testing.T) {
	var names []string
	before, after := memory{}, memory{}
	for i := range 3000 {
		n := fmt.Sprintf("%s-%04d", strings.Repeat("c", 30), i)
		names = append(names, n)
		before[cm(n)] = obj(map[string]string{"k": "1"}, nil, "1")
		after[cm(n)] = before[cm(n)]
	}
	after[cm(names[1234])] = obj(map[string]string{"k": "2"}, nil, "2")
	in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now, Template: template(names),
		Annotations: map[string]string{"reroll.dev/auto": "true", "kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 171_000)}}
	first, err := DecideChange(defaults(), in, before)
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != FirstSight {
		t.Fatalf("outcome = %s", first.Outcome)
	}
	total := 0
	for k, v := range in.Annotations {
		total += len(k) + len(v)
	}
	for k, v := range first.Annotations {
		total += len(k) + len(v)
	}
	if total > 256<<10 {
		t.Errorf("annotations of %d bytes, over Kubernetes' 256 KiB", total)
	}
	if len(first.Events) != 1 || first.Events[0].Reason != ReasonRecordTooLarge || !strings.Contains(first.Events[0].Note, "one digest for all") {
		t.Errorf("events = %+v", first.Events)
	}
	in.Annotations[RecordAnnotation] = first.Annotations[RecordAnnotation]
	again, err := DecideChange(defaults(), in, before)
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != Unchanged || len(again.Warnings) != 0 || len(again.Events) != 0 {
		t.Errorf("unchanged: outcome %s, warnings %+v, events %+v", again.Outcome, again.Warnings, again.Events)
	}
	p, err := DecideChange(defaults(), in, after)
	if err != nil {
		t.Fatal(err)
	}
	if p.Outcome != Roll {
		t.Fatalf("outcome after a change = %s", p.Outcome)
	}
}

// The third review (H3): a workload that rolls nothing (its patterns
// refused, or Wave's required objects missing) kept its signed pending
// change, which then stayed ahead of every newer change for the bound.
func TestDecide_ClearsThePendingChangeOfAWorkloadThatRollsNothing(t *testing.T) {
	costly := make([]string, annotation.MaxListEntries)
	for i := range costly {
		costly[i] = "(?:.?){80}#" + strings.Repeat("b", i%10)
	}
	names := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
	for i := range 300 {
		names[cm(strings.Repeat("n", 240)+"-"+itoa(i))] = obj(map[string]string{"a": "1"}, nil, "1")
	}
	cases := map[string]struct {
		annotations map[string]string // the workload's opt-in
		template    []string          // the ConfigMaps its pod template reads
		want        Outcome           // the outcome
	}{
		"refused: its patterns cost too much": {
			annotations: map[string]string{annotation.DefaultNames().ConfigMapReload: strings.Join(costly, ",")},
			want:        Refused,
		},
		"waiting: a required object of Wave's is missing": {
			annotations: map[string]string{annotation.WaveUpdate: "true"},
			template:    []string{"cfg", "not-yet"},
			want:        Waiting,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.MaxConcurrentRollouts = 1
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
				Annotations: c.annotations, Template: template(c.template), Progress: &workload.Progress{Done: true}}
			in.Annotations[PendingAnnotation] = Sign(o.Key, in.UID, PendingAnnotation, formatPending(now.Add(-time.Hour), DeferMaxConcurrent, now.Add(time.Minute)))
			p, err := DecideChange(o, in, names)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Fatalf("outcome = %s, want %s", p.Outcome, c.want)
			}
			if v, ok := p.Annotations[PendingAnnotation]; !ok || v != "" {
				t.Errorf("pending = %q (written %v), want removed", v, ok)
			}
			for k := range p.Annotations {
				if k != PendingAnnotation {
					t.Errorf("writes %s; want only the pending change removed (the record waits)", k)
				}
			}
		})
	}
}
