package window

import (
	"strings"
	"testing"
	"time"
)

func TestParseAndAt(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		value string    // the annotation value
		now   time.Time // the time asked about
		open  bool      // whether now is inside a window
		until time.Time // when it closes (open) or next opens (closed)
		err   bool      // whether Parse fails
	}{
		"inside a UTC window": {
			value: "0 2 * * * 2h",
			now:   time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC),
			open:  true, until: time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC),
		},
		"at the opening minute": {
			value: "0 2 * * * 2h",
			now:   time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
			open:  true, until: time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC),
		},
		"the close is outside": {
			value: "0 2 * * * 2h",
			now:   time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC),
			until: time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC),
		},
		"weekdays only: Saturday waits for Monday": {
			value: "0 2 * * MON-FRI 2h",
			now:   time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), // a Saturday
			until: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
		},
		"a time zone": {
			value: "CRON_TZ=Europe/Berlin 0 2 * * * 1h",
			now:   time.Date(2026, 11, 23, 1, 30, 0, 0, time.UTC), // 02:30 in Berlin
			open:  true, until: time.Date(2026, 11, 23, 3, 0, 0, 0, berlin),
		},
		"the earliest of several windows opens next": {
			value: "0 22 * * SAT 4h; 0 2 * * MON-FRI 2h",
			now:   time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
			until: time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC),
		},
		"a window across midnight": {
			value: "0 22 * * * 4h",
			now:   time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC),
			open:  true, until: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
		},
		"no duration":          {value: "0 2 * * *", err: true},
		"a bad cron field":     {value: "0 25 * * * 2h", err: true},
		"a negative window":    {value: "0 2 * * * -1h", err: true},
		"an unknown zone":      {value: "CRON_TZ=Mars/Olympus 0 2 * * * 1h", err: true},
		"nothing":              {value: " ; ", err: true},
		"one bad of two":       {value: "0 2 * * * 2h; x", err: true},
		"seconds are no field": {value: "0 0 2 * * * 2h", err: true},
		// The security review's window: 30 February never comes.
		"a window that never opens":     {value: "0 0 30 2 * 1h", err: true},
		"one window of two never opens": {value: "0 2 * * * 1h; 0 0 31 4 * 1h", err: true},
		"a leap day opens": {
			value: "0 0 29 2 * 1h",
			now:   time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC),
			until: time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC),
		},
		"open longer than a week": {value: "0 2 * * MON 169h", err: true},
		"open for a week": {
			value: "0 0 * * MON 168h",
			now:   time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC), // a Monday
			open:  true, until: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		},
		// The review's 250 KB value, refused on its length alone.
		"longer than the limit": {value: strings.Repeat("0 0 30 2 * 1h;", 20000), err: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ws, err := Parse(c.value)
			if c.err {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want an error", c.value, ws)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.value, err)
			}
			open, until := ws.At(c.now)
			if open != c.open || !until.Equal(c.until) {
				t.Errorf("At(%s) = %v, %s; want %v, %s", c.now, open, until, c.open, c.until)
			}
		})
	}
}

// FuzzParse checks that Parse never panics and that what it accepts
// answers At without panicking, with a next opening after a closed time.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"0 2 * * MON-FRI 2h",
		"CRON_TZ=Europe/Berlin 0 2 * * * 1h; 0 10 * * SAT 4h",
		"TZ=UTC */15 * * * * 5m",
		"@daily 1h",
		"0 2 * * * -1h",
		";;",
		"0 0 30 2 * 1h",
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		ws, err := Parse(v)
		if err != nil {
			return
		}
		if len(v) > MaxLength {
			t.Fatalf("accepted %d bytes", len(v))
		}
		for _, w := range ws {
			if w.Duration <= 0 || w.Duration > MaxDuration {
				t.Fatalf("accepted duration %s of %q", w.Duration, v)
			}
		}
		open, until := ws.At(now)
		if !open && until.IsZero() {
			t.Errorf("At(%s) on %q: accepted a window that never opens", now, v)
		}
		if !open && !until.IsZero() && until.Before(now) {
			t.Errorf("At(%s) on %q: closed, next opening %s is in the past", now, v, until)
		}
	})
}
