package delivery

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RolloutsAnnotation is written by Reroll on a workload it rolls while the
// storm breaker is on: the Unix seconds of its latest rollouts, oldest
// first, space-separated, at most Storm.Max of them, signed under the
// installation key (plan.SignedState). Removing it (kubectl reroll resume)
// lets a held workload roll at once.
const RolloutsAnnotation = "reroll.dev/rollouts"

// HoldStorm: the workload rolled Storm.Max times within Storm.Period.
const HoldStorm = "storm"

// ReasonRolloutStorm is the Warning Event of a workload held by the storm
// breaker.
const ReasonRolloutStorm = "RolloutStorm"

// Defaults of the storm breaker: a workload rolls at most 10 times in 10
// minutes. Reloader's #1183 (a certificate flapping every few seconds,
// 80,000 ReplicaSets) is then held after its tenth rollout, while a team
// that edits a ConfigMap by hand never meets the bound.
const (
	DefaultStormMax    = 10
	DefaultStormPeriod = 10 * time.Minute
)

// Storm is the storm breaker's bound: more than Max rollouts of one workload
// within Period are held; Max 0 turns it off.
type Storm struct {
	Max    int
	Period time.Duration
}

// ParseRollouts reads RolloutsAnnotation; unreadable entries are dropped
// (a tenant may write anything there; dropping only lets the workload roll,
// as without the breaker).
func ParseRollouts(v string) []time.Time {
	var out []time.Time
	for _, f := range strings.Fields(v) {
		if len(out) >= 1000 {
			break
		}
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			out = append(out, time.Unix(n, 0).UTC())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// FormatRollouts encodes times for RolloutsAnnotation.
func FormatRollouts(times []time.Time) string {
	s := make([]string, len(times))
	for i, t := range times {
		s[i] = strconv.FormatInt(t.Unix(), 10)
	}
	return strings.Join(s, " ")
}

// Allow decides whether a workload whose latest rollouts were at times may
// roll at now. When it may, kept is the new RolloutsAnnotation value's
// times (now added, those out of the period or beyond Max dropped); when it
// may not, until is when the oldest rollout in the period leaves it, and
// detail says so.
func (s Storm) Allow(times []time.Time, now time.Time) (ok bool, kept []time.Time, until time.Time, detail string) {
	if s.Max <= 0 || s.Period <= 0 {
		return true, nil, time.Time{}, ""
	}
	var recent []time.Time
	for _, t := range times {
		if now.Sub(t) < s.Period && !t.After(now) {
			recent = append(recent, t)
		}
	}
	if len(recent) >= s.Max {
		until = recent[len(recent)-s.Max].Add(s.Period)
		return false, recent, until, fmt.Sprintf("rolled %d times within %s (the storm breaker's bound, --storm-max-rollouts and --storm-period); held until %s, or kubectl reroll resume", len(recent), s.Period, until.UTC().Format(time.RFC3339))
	}
	recent = append(recent, now.UTC().Truncate(time.Second))
	if len(recent) > s.Max {
		recent = recent[len(recent)-s.Max:]
	}
	return true, recent, time.Time{}, ""
}
