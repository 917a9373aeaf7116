package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/reroll/reroll/internal/digest"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	opts := Options{Window: 5 * time.Second, HaltAfter: 1, First: Position{Place: -1}, Recheck: 5 * time.Second}
	canary := func(r Record, st State) Member {
		r.Sets, r.Place = []string{"s"}, -1
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
		// halt: a new halt is recorded, naming these failed workloads,
		// halted at haltAt (zero: now).
		halt   []string
		haltAt time.Time
		// marked is the record's Halted: the halt that holds the workload.
		marked time.Time
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
		"a workload's own wave never moves it before an earlier namespace": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0)}, InProgress)}},
			self: prod(Record{Seen: at(0), Wave: -1000}), now: at(10),
			hold: HoldWave, seen: at(0), recheck: true,
		},
		"a later wave of the same namespace waits for its earlier wave": {
			opts: Options{Window: 5 * time.Second, First: Position{Wave: -2}}, set: Set{ID: "s", Members: []Member{{Workload: "Deployment/prod/db", Record: Record{Sets: []string{"s"}, Wave: -2, Seen: at(0), Rolled: at(0)}, State: InProgress}}},
			self: prod(Record{Seen: at(0)}), now: at(10),
			hold: HoldWave, seen: at(0), recheck: true,
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
			opts: Options{Window: 5 * time.Second, First: Position{Place: -1}}, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed)}},
			self: prod(Record{Seen: at(0)}), now: at(30),
			seen: at(0),
		},
		"under the count the breaker waits": {
			opts: Options{Window: 5 * time.Second, First: Position{Place: -1}, HaltAfter: 2}, set: Set{ID: "s"}, self: canary(Record{Seen: at(0), Rolled: at(0)}, Failed), now: at(30),
			seen: at(0), failed: "ProgressDeadlineExceeded",
		},
		"a member of a set failed elsewhere is held as halted": {
			opts: opts, set: Set{ID: "s", Members: []Member{canary(Record{Seen: at(0), Rolled: at(0), Failed: "x"}, Failed)}},
			self: prod(Record{Seen: at(0)}), now: at(30),
			hold: HoldHalted, seen: at(0), halt: []string{"Deployment/canary/web"}, marked: at(30),
		},
		"a recorded halt holds even the lowest wave": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Halted: at(20), Failed: []string{"Deployment/x/y"}}},
			self: canary(Record{Seen: at(0)}, ""), now: at(30),
			hold: HoldHalted, seen: at(0), marked: at(20),
		},
		"a halt never recorded still holds the workload it held, once its failures are gone, and is recorded again": {
			opts: opts, set: Set{ID: "s"},
			self: prod(Record{Seen: at(0), Halted: at(20)}), now: at(30),
			hold: HoldHalted, seen: at(0), halt: []string{}, haltAt: at(20), marked: at(20),
		},
		"a halt never recorded after an earlier resume still holds": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Resumed: at(10)}},
			self: prod(Record{Seen: at(0), Halted: at(20)}), now: at(30),
			hold: HoldHalted, seen: at(0), halt: []string{}, haltAt: at(20), marked: at(20),
		},
		"the resume of the halt that held the workload releases it": {
			opts: opts, set: Set{ID: "s", Halt: &Halt{Resumed: at(25)}},
			self: prod(Record{Seen: at(0), Halted: at(20)}), now: at(30),
			seen: at(0),
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
			hold: HoldHalted, seen: at(0), halt: []string{"Deployment/prod/api"}, marked: at(60),
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
			case c.halt != nil:
				haltAt := c.haltAt
				if haltAt.IsZero() {
					haltAt = c.now
				}
				if d.Halt == nil || strings.Join(d.Halt.Failed, ",") != strings.Join(c.halt, ",") || !d.Halt.Halted.Equal(haltAt) {
					t.Errorf("halt %+v, want one at %v naming %v", d.Halt, haltAt, c.halt)
				}
			}
			if !d.Record.Halted.Equal(c.marked) {
				t.Errorf("record halted %v, want %v", d.Record.Halted, c.marked)
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
	key, err := digest.NewKey([]byte(strings.Repeat("k", digest.MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := digest.NewKey([]byte(strings.Repeat("o", digest.MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	const sum = "d3486ae9136e7856bc42212385ea797094475802"
	a := SetID(key, "", "ConfigMap", "cfg", sum, false)
	cases := map[string]struct {
		// id is computed from other inputs; same says whether it equals a.
		id   string
		same bool
	}{
		"the same content, in another shared namespace": {SetID(key, "", "ConfigMap", "cfg", sum, false), true},
		"the same content, in a namespace of its own":   {SetID(key, "tenant", "ConfigMap", "cfg", sum, false), false},
		"another content":      {SetID(key, "", "ConfigMap", "cfg", "0"+sum[1:], false), false},
		"another name":         {SetID(key, "", "ConfigMap", "other", sum, false), false},
		"another kind":         {SetID(key, "", "Secret", "cfg", sum, false), false},
		"deleted":              {SetID(key, "", "ConfigMap", "cfg", sum, true), false},
		"another installation": {SetID(other, "", "ConfigMap", "cfg", sum, false), false},
	}
	for name, c := range cases {
		if (c.id == a) != c.same || len(c.id) != 16 {
			t.Errorf("%s: %s vs %s, want same %v", name, c.id, a, c.same)
		}
	}
}

func TestOrder(t *testing.T) {
	o := Order{
		Places: map[string]int{"canary": -1, "prod": 0, "late": 2},
		Lowest: map[string]int{"canary": -3, "prod": -5, "tenant": -1000},
	}
	cases := map[string]struct {
		// order and namespace are the input.
		order     Order
		namespace string
		// scope, tracked and first are the expected answers.
		scope   string
		tracked bool
		first   Position
	}{
		"a shared namespace's sets are shared; the first place is the lowest Namespace's, with its lowest workload wave": {
			order: o, namespace: "prod", scope: "", tracked: true, first: Position{Place: -1, Wave: -3},
		},
		"a tenant namespace keeps its sets to itself, ordered by its own waves": {
			order: o, namespace: "tenant", scope: "tenant", tracked: true, first: Position{Wave: -1000},
		},
		"a namespace with no wave anywhere is not tracked, whatever other namespaces set": {
			order: o, namespace: "quiet", scope: "quiet", tracked: false, first: Position{},
		},
		"no wave at all": {
			order: Order{}, namespace: "prod", scope: "prod", tracked: false, first: Position{},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if s := c.order.Scope(c.namespace); s != c.scope {
				t.Errorf("scope %q, want %q", s, c.scope)
			}
			if tr := c.order.Tracked(c.namespace); tr != c.tracked {
				t.Errorf("tracked %v, want %v", tr, c.tracked)
			}
			if f := c.order.First(c.namespace); f != c.first {
				t.Errorf("first %v, want %v", f, c.first)
			}
		})
	}
}

func TestPositionOf(t *testing.T) {
	cases := map[string]struct {
		// workload and namespace are the annotations.
		workload, namespace map[string]string
		want                Position
		err                 bool
	}{
		"nothing set":                       {},
		"the Namespace's wave is its place": {namespace: map[string]string{WaveAnnotation: "-1"}, want: Position{Place: -1}},
		"the workload's wave orders within": {workload: map[string]string{WaveAnnotation: "-1000"}, namespace: map[string]string{WaveAnnotation: "2"}, want: Position{Place: 2, Wave: -1000}},
		"a malformed wave counts as 0":      {workload: map[string]string{WaveAnnotation: "first"}, namespace: map[string]string{WaveAnnotation: "-1"}, want: Position{Place: -1}, err: true},
		"a malformed Namespace wave too":    {namespace: map[string]string{WaveAnnotation: "soon"}, err: true},
	}
	for name, c := range cases {
		p, err := PositionOf(c.workload, c.namespace)
		if p != c.want || (err != nil) != c.err {
			t.Errorf("%s: %v (%v), want %v, error %v", name, p, err, c.want, c.err)
		}
	}
	if !(Position{Place: -1, Wave: 5}).Less(Position{Wave: -1000}) {
		t.Error("an earlier place does not come first")
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
	if j := r.Join([]string{"a"}, nil, Position{Wave: 3}); !j.Equal(r) {
		t.Errorf("joining the same set changed the record: %s", j)
	}
	if j := r.Join([]string{"b"}, []string{"ConfigMap/ns/cfg"}, Position{}); !j.Seen.IsZero() || j.Sets[0] != "b" {
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

func TestResumable(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	halts := map[string]*Halt{
		"shared":  {Halted: at, Failed: []string{"Deployment/canary/web"}, Objects: []string{"ConfigMap/canary/ca", "ConfigMap/prod/ca"}},
		"resumed": {Resumed: at, Failed: []string{"Deployment/prod/web"}, Objects: []string{"ConfigMap/prod/ca"}},
		"failed":  {Halted: at, Failed: []string{"Deployment/prod-eu/api"}},
	}
	cases := map[string]struct {
		// candidates are the sets the workload's annotation names;
		// namespace is the workload's.
		candidates []string
		namespace  string
		want       []string
	}{
		"a member's namespace, named by the record's objects":     {candidates: []string{"shared"}, namespace: "prod", want: []string{"shared"}},
		"a failed workload's namespace":                           {candidates: []string{"failed"}, namespace: "prod-eu", want: []string{"failed"}},
		"another namespace's set, written on a tenant's workload": {candidates: []string{"shared", "failed"}, namespace: "tenant"},
		"a namespace whose name starts like a named one":          {candidates: []string{"shared"}, namespace: "pro"},
		"a set no longer halted":                                  {candidates: []string{"resumed"}, namespace: "prod"},
		"a set with no record":                                    {candidates: []string{"unknown"}, namespace: "prod"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Resumable(halts, c.candidates, c.namespace); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestHalt_Bounded(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = "Deployment/tenant/" + strings.Repeat("x", 700)
	}
	h := Halt{Failed: many, Objects: many, Signal: strings.Repeat("s", 1<<20)}.Bounded()
	if n := len(h.String()); n > 48<<10 {
		t.Errorf("a bounded record of a tenant's 1000 long names and a 1 MiB signal has %d bytes", n)
	}
	if len(h.Failed) != maxHaltNames+1 || h.Failed[maxHaltNames] != "+968 more" {
		t.Errorf("failed: %d names, last %q", len(h.Failed), h.Failed[len(h.Failed)-1])
	}
	small := Halt{Failed: []string{"Deployment/canary/web"}, Objects: []string{"ConfigMap/canary/ca"}, Signal: "ProgressDeadlineExceeded"}
	if got := small.Bounded(); got.String() != small.String() {
		t.Errorf("a small record changed: %s", got)
	}
}
