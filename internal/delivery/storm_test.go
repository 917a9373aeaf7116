package delivery

import (
	"testing"
	"time"
)

func TestStormAllow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, n := range s {
			out = append(out, t0.Add(time.Duration(n)*time.Second))
		}
		return out
	}
	s := Storm{Max: 3, Period: time.Minute}
	cases := map[string]struct {
		storm Storm
		times []time.Time
		now   time.Time
		// ok is whether it may roll; kept the expected times kept (when
		// ok); until when the hold ends (when not).
		ok    bool
		kept  []time.Time
		until time.Time
	}{
		"a first rollout":                      {s, nil, t0, true, at(0), time.Time{}},
		"under the bound":                      {s, at(0, 10), t0.Add(20 * time.Second), true, at(0, 10, 20), time.Time{}},
		"at the bound within the period":       {s, at(0, 10, 20), t0.Add(30 * time.Second), false, nil, t0.Add(time.Minute)},
		"old rollouts leave the period":        {s, at(0, 10, 20), t0.Add(61 * time.Second), true, at(10, 20, 61), time.Time{}},
		"times from the future do not count":   {s, at(0, 10, 500), t0.Add(20 * time.Second), true, at(0, 10, 20), time.Time{}},
		"off":                                  {Storm{}, at(0, 1, 2, 3, 4), t0.Add(5 * time.Second), true, nil, time.Time{}},
		"the hold ends when the oldest leaves": {Storm{Max: 2, Period: time.Minute}, at(0, 30, 40), t0.Add(50 * time.Second), false, nil, t0.Add(90 * time.Second)},
	}
	for name, c := range cases {
		ok, kept, until, detail := c.storm.Allow(c.times, c.now)
		if ok != c.ok {
			t.Errorf("%s: ok %v (%s), want %v", name, ok, detail, c.ok)
			continue
		}
		if ok && FormatRollouts(kept) != FormatRollouts(c.kept) {
			t.Errorf("%s: kept %v, want %v", name, kept, c.kept)
		}
		if !ok && (!until.Equal(c.until) || detail == "") {
			t.Errorf("%s: until %v (%q), want %v", name, until, detail, c.until)
		}
	}
	if got := ParseRollouts("20 x 10 " + FormatRollouts(at(5))); FormatRollouts(got) != "10 20 "+FormatRollouts(at(5)) {
		t.Errorf("ParseRollouts sorted and dropped wrongly: %v", got)
	}
}
