package delivery

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	opts := Options{Window: 5 * time.Second, HaltAfter: 1, MinWave: -1, Recheck: 5 * time.Second}
	canary := func(r Record, st State) Member {
		r.Sets, r.Wave = []string{"s"}, -1
		return Member{Workload: "Deployment/canary/web", Record: r, State: st, Signal: "ProgressDeadlineExceeded", BakeTime: 30 * time.Second}
	}
	prod := func(r Record) Member {
		r.Sets = []string{"s"}
		return Member{Workload: "Deployment/prod/web", Record: r}
	}
	cases := map[string]struct {
		opts Options
		set  Set
		self Member
		now  time.Time
		// hold is the expected Hold; until the expected Until (zero: none).
		hold  string
		until time.Time
		// seen, healthy and failed are the expected record fields.
		seen, healthy time.Time
		failed        string
		// halt: a new halt is recorded, naming these failed workloads.
		halt []string
		// recheck: a positive Recheck is expected.
		recheck bool
	}{
		"the lowest wave rolls at once and records when it joined": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{}, ""), now: at(0),
			seen: at(0),
		},
		"no wave anywhere: wave 0 is the lowest and rolls at once": {
			opts: Options{HaltAfter: 1}, set: Set{ID: "s"}, self: prod(Record{}), now: at(0),
			seen: at(0),
		},
		"a later wave waits the window for earlier members to join": {
			opts: opts, set: Set{ID: "s"}, self: prod(Record{}), now: at(1),
			hold: HoldWave, until: at(6), seen: at(1), recheck: true,
		},
		"the window counts from the first member seen": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0)}, InProgress)}},
			self: prod(Record{Seen: at(2)}), now: at(4),
			hold: HoldWave, until: at(5), seen: at(2), recheck: true,
		},
		"a later wave waits while the earlier wave rolls": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0)}, InProgress)}},
			self: prod(Record{Seen: at(0)}), now: at(10),
			hold: HoldWave, seen: at(0), recheck: true,
		},
		"a later wave waits while the earlier wave has not rolled": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0)}, "")}},
			self: prod(Record{Seen: at(0)}), now: at(10),
			hold: HoldWave, seen: at(0), recheck: true,
		},
		"a later wave waits for the earlier wave's bake time": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, Current)}},
			self: prod(Record{Seen: at(0)}), now: at(20),
			hold: HoldWave, seen: at(0), recheck: true,
		},
		"a later wave starts once the earlier wave baked": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, Current)}},
			self: prod(Record{Seen: at(0)}), now: at(40),
			seen: at(0),
		},
		"members of the same or a later wave do not hold": {
			opts: opts, set: Set{ID: "s", Members: []Member{{Workload: "Deployment/prod/api", Record: Record{Sets: []string{"s"}, Seen: at(0)}}}},
			self: prod(Record{Seen: at(0)}), now: at(10),
			seen: at(0),
		},
		"a rolled member records when its rollout became healthy": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0)}, Current), now: at(12),
			seen: at(0), healthy: at(12),
		},
		"a rolled member still rolling is decided again": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0)}, InProgress), now: at(12),
			seen: at(0), recheck: true,
		},
		"a baking member is decided again until its bake time is over": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, Current), now: at(20),
			seen: at(0), healthy: at(10), recheck: true,
		},
		"a member unhealthy during its bake time failed, and trips the breaker": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, InProgress), now: at(20),
			seen: at(0), healthy: at(10), failed: "unhealthy during the bake time of 30s: ProgressDeadlineExceeded", halt: []string{"Deployment/canary/web"},
		},
		"a baking member whose latest spec is not observed yet is not judged": {
			opts: opts, set: Set{ID: "s"}, self: func() Member {
				m := canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, InProgress)
				m.Unobserved = true
				return m
			}(), now: at(20),
			seen: at(0), healthy: at(10), recheck: true,
		},
		"a member unhealthy after its bake time is not judged": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0), Healthy: at(10)}, InProgress), now: at(41),
			seen: at(0), healthy: at(10),
		},
		"a failed rollout trips the breaker": {
			opts: opts, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0)}, Failed), now: at(30),
			seen: at(0), failed: "ProgressDeadlineExceeded", halt: []string{"Deployment/canary/web"},
		},
		"with the breaker off a failure halts nothing and holds no later wave": {
			opts: Options{Window: 5 * time.Second, MinWave: -1}, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed)}},
			self: prod(Record{Seen: at(0)}), now: at(30),
			seen: at(0),
		},
		"under the count the breaker waits": {
			opts: Options{Window: 5 * time.Second, MinWave: -1, HaltAfter: 2}, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0)}, Failed), now: at(30),
			seen: at(0), failed: "ProgressDeadlineExceeded",
		},
		"a member of a set failed elsewhere is held as halted": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed)}},
			self: prod(Record{Seen: at(0)}), now: at(30),
			hold: HoldHalted, seen: at(0), halt: []string{"Deployment/canary/web"},
		},
		"a recorded halt holds even the lowest wave": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Halted: at(20), Failed: []string{"Deployment/x/y"}}},
			self: canary(Record{Seen: at(0)}, ""), now: at(30),
			hold: HoldHalted, seen: at(0),
		},
		"a resumed set starts the next wave at once, the accepted failure no longer holds": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Resumed: at(40), Failed: []string{"Deployment/canary/web"}},
				Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed)}},
			self: prod(Record{Seen: at(0)}), now: at(41),
			seen: at(0),
		},
		"after a resume only new failures count": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Resumed: at(40)},
				Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed), {Workload: "Deployment/prod/api", Record: Record{Sets: []string{"s"}, Seen: at(0), Rolled: at(50), Failed: "y"}}}},
			self: prod(Record{Seen: at(0)}), now: at(60),
			hold: HoldHalted, seen: at(0), halt: []string{"Deployment/prod/api"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(c.opts, c.set, c.self, c.now)
			if d.Hold != c.hold || !d.Until.Equal(c.until) {
				t.Errorf("hold %q until %v (%s), want %q until %v", d.Hold, d.Until, d.Detail, c.hold, c.until)
			}
			if !d.Record.Seen.Equal(c.seen) || !d.Record.Healthy.Equal(c.healthy) || d.Record.Failed != c.failed {
				t.Errorf("record %s, want seen %v healthy %v failed %q", d.Record, c.seen, c.healthy, c.failed)
			}
			if d.Changed != !d.Record.Equal(c.self.Record) {
				t.Errorf("changed %v for %s -> %s", d.Changed, c.self.Record, d.Record)
			}
			switch {
			case c.halt == nil && d.Halt != nil:
				t.Errorf("halt %+v, want none", *d.Halt)
			case c.halt != nil && (d.Halt == nil || strings.Join(d.Halt.Failed, ",") != strings.Join(c.halt, ",") || !d.Halt.Halted.Equal(c.now)):
				t.Errorf("halt %+v, want one at %v naming %v", d.Halt, c.now, c.halt)
			}
			if (d.Recheck > 0) != c.recheck {
				t.Errorf("recheck %v, want one: %v", d.Recheck, c.recheck)
			}
			if d.Hold != "" && d.Detail == "" {
				t.Error("a hold without a detail")
			}
		})
	}
}

func TestSetID(t *testing.T) {
	a := SetID("ConfigMap", "cfg", map[string]string{"k": "d1", "l": "d2"}, false)
	cases := map[string]struct {
		// id is computed from other inputs; same says whether it equals a.
		id   string
		same bool
	}{
		"the same content in another namespace": {SetID("ConfigMap", "cfg", map[string]string{"l": "d2", "k": "d1"}, false), true},
		"another value":                         {SetID("ConfigMap", "cfg", map[string]string{"k": "d1", "l": "d3"}, false), false},
		"another name":                          {SetID("ConfigMap", "other", map[string]string{"k": "d1", "l": "d2"}, false), false},
		"another kind":                          {SetID("Secret", "cfg", map[string]string{"k": "d1", "l": "d2"}, false), false},
		"deleted":                               {SetID("ConfigMap", "cfg", nil, true), false},
	}
	for name, c := range cases {
		if (c.id == a) != c.same || len(c.id) != 16 {
			t.Errorf("%s: %s vs %s, want same %v", name, c.id, a, c.same)
		}
	}
}

func TestWaveAndBakeTime(t *testing.T) {
	cases := map[string]struct {
		// workload and namespace are the annotations.
		workload, namespace map[string]string
		wave                int
		bake                time.Duration
		err                 bool
	}{
		"nothing set":              {wave: 0, bake: time.Minute},
		"the namespace's":          {namespace: map[string]string{WaveAnnotation: "-1", BakeTimeAnnotation: "30s"}, wave: -1, bake: 30 * time.Second},
		"the workload's wins":      {workload: map[string]string{WaveAnnotation: "2", BakeTimeAnnotation: "0s"}, namespace: map[string]string{WaveAnnotation: "-1", BakeTimeAnnotation: "30s"}, wave: 2},
		"malformed counts as none": {workload: map[string]string{WaveAnnotation: "first", BakeTimeAnnotation: "soon"}, bake: time.Minute, err: true},
		"out of range":             {workload: map[string]string{WaveAnnotation: "99999", BakeTimeAnnotation: "-1s"}, bake: time.Minute, err: true},
	}
	for name, c := range cases {
		w, werr := Wave(c.workload, c.namespace)
		b, berr := BakeTime(c.workload, c.namespace, time.Minute)
		if w != c.wave || b != c.bake || (werr != nil) != c.err || (berr != nil) != c.err {
			t.Errorf("%s: wave %d (%v), bake %v (%v); want %d, %v, error %v", name, w, werr, b, berr, c.wave, c.bake, c.err)
		}
	}
}

func TestRecord(t *testing.T) {
	r := Record{Sets: []string{"a"}, Wave: -1, Seen: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	got, err := ParseRecord(r.String())
	if err != nil || !got.Equal(r) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if want := `{"sets":["a"],"wave":-1,"seen":"2026-01-01T00:00:00Z"}`; r.String() != want {
		t.Errorf("encoded %s, want %s", r, want)
	}
	if j := r.Join([]string{"a"}, nil, 3); !j.Equal(r) {
		t.Errorf("joining the same set changed the record: %s", j)
	}
	if j := r.Join([]string{"b"}, []string{"ConfigMap/ns/cfg"}, 0); !j.Seen.IsZero() || j.Sets[0] != "b" {
		t.Errorf("a newer set did not start a fresh record: %s", j)
	}
	for _, bad := range []string{"{", `{"sets":1}`, strings.Repeat(" ", maxRecordBytes+1)} {
		if _, err := ParseRecord(bad); err == nil {
			t.Errorf("%.20q parsed", bad)
		}
	}
	h := Halt{Halted: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Failed: []string{"Deployment/a/b"}}
	if !(&h).Active() {
		t.Error("a halt is not active")
	}
	resumed := h.Resume(time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC))
	if (&resumed).Active() || resumed.Resumed.IsZero() {
		t.Errorf("a resumed halt: %s", resumed)
	}
	back, err := ParseHalt(resumed.String())
	if err != nil || back.String() != resumed.String() {
		t.Errorf("halt round trip: %v %v", back, err)
	}
}
