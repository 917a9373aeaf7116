package window

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// Time zones resolve in images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Windows are one or more rollout windows; a time is inside when it is
// inside any of them. The zero value has no window (and is never open).
type Windows []Window

// Window is one recurring window: it opens at each time Start yields and
// stays open for Duration.
type Window struct {
	// Spec is the window as written, for messages.
	Spec string
	// Start yields the window's opening times.
	Start cron.Schedule
	// Duration is how long the window stays open, positive.
	Duration time.Duration
}

// parser reads the five standard cron fields (minute, hour, day of month,
// month, day of week) and the optional CRON_TZ=/TZ= prefix.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Limits on a rollout-window annotation, which any tenant who can annotate
// a workload or (for the namespace's) a Namespace writes. A 250 KB value of
// windows that never open used to be parsed on every reconcile, each
// reconcile then polling 5 s later.
const (
	// MaxLength is the longest value read, in bytes.
	MaxLength = 1024
	// MaxDuration is the longest a window may stay open: a week, since
	// windows recur at least weekly in practice and a longer one is no
	// gate at all.
	MaxDuration = 7 * 24 * time.Hour
)

// reference is the time from which Parse checks that a window opens at
// all: cron schedules repeat within four years (leap days), and the parser
// searches five years ahead.
var reference = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Parse reads an annotation value: windows separated by ";", each
// "[CRON_TZ=<IANA zone>] <minute> <hour> <day of month> <month> <day of week> <duration>",
// where the five cron fields say when the window opens (github.com/robfig/cron/v3
// syntax: "*", lists, ranges, steps, MON-FRI) in the zone (UTC when none is
// given), and the duration (Go syntax: "2h", "90m") how long it stays
// open. Example: "CRON_TZ=Europe/Berlin 0 2 * * MON-FRI 2h; 0 10 * * SAT 4h".
// It returns an error naming each malformed window, a window open longer
// than MaxDuration, and a window that never opens (such as "0 0 30 2 * 1h",
// on 30 February); and an error for a value longer than MaxLength, before
// parsing any of it.
func Parse(v string) (Windows, error) {
	if len(v) > MaxLength {
		return nil, fmt.Errorf("rollout window of %d bytes is longer than the limit of %d", len(v), MaxLength)
	}
	var out Windows
	var errs []error
	for part := range strings.SplitSeq(v, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		w, err := parseOne(part)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, w)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("rollout window %q: no window given", v)
	}
	return out, nil
}

func parseOne(s string) (Window, error) {
	i := strings.LastIndexAny(s, " \t")
	if i < 0 {
		return Window{}, fmt.Errorf("rollout window %q: want a cron schedule and a duration", s)
	}
	spec, durText := strings.TrimSpace(s[:i]), s[i+1:]
	d, err := time.ParseDuration(durText)
	if err != nil {
		return Window{}, fmt.Errorf("rollout window %q: duration: %w", s, err)
	}
	if d <= 0 {
		return Window{}, fmt.Errorf("rollout window %q: duration %s is not positive", s, d)
	}
	if d > MaxDuration {
		return Window{}, fmt.Errorf("rollout window %q: duration %s is longer than the limit of %s", s, d, MaxDuration)
	}
	if !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		// Without a zone the parser would use the process's local zone.
		spec = "CRON_TZ=UTC " + spec
	} else if !strings.Contains(spec, " ") {
		// cron v3.0.1 panics on a zone with no schedule after it.
		return Window{}, fmt.Errorf("rollout window %q: no schedule after the time zone", s)
	}
	sched, err := parser.Parse(spec)
	if err != nil {
		return Window{}, fmt.Errorf("rollout window %q: %w", s, err)
	}
	if sched.Next(reference).IsZero() {
		return Window{}, fmt.Errorf("rollout window %q: never opens", s)
	}
	return Window{Spec: s, Start: sched, Duration: d}, nil
}

// At reports whether now is inside a window. When it is, until is when
// that window closes (the latest close of the windows open at now); when it
// is not, until is when the next window opens. With no windows it reports
// false and the zero time.
func (ws Windows) At(now time.Time) (open bool, until time.Time) {
	for _, w := range ws {
		// The latest opening at or before now that is still open: the first
		// opening after now-Duration, if it is not after now.
		if start := w.Start.Next(now.Add(-w.Duration).Add(-time.Nanosecond)); !start.After(now) {
			if end := start.Add(w.Duration); end.After(now) && (!open || end.After(until)) {
				open, until = true, end
			}
		}
	}
	if open {
		return true, until
	}
	for _, w := range ws {
		// Next gives the first opening strictly after its argument.
		next := w.Start.Next(now.Add(-time.Nanosecond))
		if next.IsZero() {
			continue
		}
		if until.IsZero() || next.Before(until) {
			until = next
		}
	}
	return false, until
}
