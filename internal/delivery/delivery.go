package delivery

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Annotations of safe delivery.
const (
	// WaveAnnotation: the wave, an integer from -1000 to 1000 (default 0),
	// in which a workload rolls for a change set; lower waves roll first, as
	// Argo CD's sync waves. On a Namespace (which only the operator may
	// update) it places the namespace in the order and lets it share change
	// sets with the other namespaces so placed; on a workload it orders the
	// workload within its namespace's place (Position, Order).
	WaveAnnotation = "reroll.dev/rollout-wave"
	// BakeTimeAnnotation on a workload or its Namespace (the workload's
	// wins): how long its rollout must stay healthy before the next wave
	// starts, a Go duration ("90s", "5m"); --bake-time is the default.
	BakeTimeAnnotation = "reroll.dev/bake-time"
	// MemberAnnotation is written by Reroll on a workload that takes part in
	// a change set: its Member record, as JSON, signed under the
	// installation key (plan.SignedState), so a tenant's forgery counts for
	// nothing and is removed; a signed value that does not parse is
	// replaced.
	MemberAnnotation = "reroll.dev/change-set"
)

// Defaults of the flags.
const (
	// DefaultWindow is how long after a change set's first member was seen
	// its later waves wait for further members to join (--change-set-window):
	// replicators copy an object to every namespace within seconds.
	DefaultWindow = 5 * time.Second
	// DefaultBakeTime is how long a wave's rollouts must stay healthy before
	// the next wave starts (--bake-time): long enough for a crash loop or a
	// failing readiness probe to show, short next to a working day.
	DefaultBakeTime = time.Minute
	// DefaultHaltAfter is --halt-after-failed-rollouts: the first failed
	// rollout halts its change set.
	DefaultHaltAfter = 1
	// DefaultRecheck is how often a member whose rollout runs, or which
	// waits for an earlier wave, is decided again.
	DefaultRecheck = 5 * time.Second
)

// Reasons a member's rollout is held back; they go into plan.PendingAnnotation.
const (
	// HoldWave: an earlier wave of the change set is not yet complete,
	// healthy and baked, or the set may still gain members.
	HoldWave = "wave"
	// HoldHalted: the change set is halted.
	HoldHalted = "halted"
)

// ReasonChangeHalted is the Warning Event of a halt: on each failed
// workload, on each changed object and on each held workload.
const ReasonChangeHalted = "ChangeHalted"

// State is what a workload's status says of its latest rollout.
type State string

// The states, as kstatus names them.
const (
	// InProgress: the rollout runs.
	InProgress State = "InProgress"
	// Current: the rollout is complete and the workload healthy.
	Current State = "Current"
	// Failed: the kind reported failure, or the deadline passed.
	Failed State = "Failed"
)

// Options are the flags of safe delivery.
type Options struct {
	// Window is how long after the set's first member was seen its later
	// waves wait for members to join; 0 means DefaultWindow.
	Window time.Duration
	// BakeTime is the bake time of members that set none; 0 is none.
	BakeTime time.Duration
	// HaltAfter halts a set once this many of its rollouts failed since it
	// was last resumed (--halt-after-failed-rollouts); 0 turns the breaker
	// off.
	HaltAfter int
	// First is the lowest position a member of the set can have
	// (Order.First): a member there has no earlier wave and starts at once.
	First Position
	// Recheck is how soon a running or waiting member is decided again; 0
	// means DefaultRecheck.
	Recheck time.Duration
}

// Member is one workload of a change set as observed: its record
// (MemberAnnotation) and, once rolled, what its status says.
type Member struct {
	// Workload names it, "Kind/namespace/name".
	Workload string
	// Record is its MemberAnnotation.
	Record
	// State and Signal are its rollout's health (Health); meaningful only
	// once Record.Rolled is set.
	State  State
	Signal string
	// Unobserved is set while the workload's controller has not yet
	// observed its latest spec (status.observedGeneration below
	// metadata.generation): its status then speaks of an older spec.
	Unobserved bool
	// BakeTime is its bake time (annotation, else Options.BakeTime).
	BakeTime time.Duration
}

// Set is one change set as observed.
type Set struct {
	// ID is the set's SetID.
	ID string
	// Halt is its durable halt record, nil when it was never halted.
	Halt *Halt
	// Members are the workloads whose MemberAnnotation names the set,
	// self included or not.
	Members []Member
}

// Decision is what to do with one member.
type Decision struct {
	// Hold is "" when the member may roll now, else HoldWave or HoldHalted;
	// Detail says why in words, for the Events.
	Hold, Detail string
	// Until is when a wave hold ends by time alone (the window or a bake
	// time), zero when it depends on other workloads.
	Until time.Time
	// Record is the member's new MemberAnnotation (Healthy or Failed set by
	// its rollout's outcome); Changed says it differs from the old one.
	Record  Record
	Changed bool
	// Halt, when set, is a new halt to record: the breaker tripped.
	Halt *Halt
	// Recheck, when positive, is how soon to decide again.
	Recheck time.Duration
}

// Decide decides for self, a member of s (its Record naming s), at now:
// first it records the outcome of self's own rollout (Healthy, Failed),
// then it trips the breaker when enough rollouts failed, then, when self
// has not rolled, whether it may roll now. It makes no call and keeps no
// state.
func Decide(o Options, s Set, self Member, now time.Time) Decision {
	d := decide(o, s, self, now)
	d.Changed = !d.Record.Equal(self.Record)
	return d
}

func decide(o Options, s Set, self Member, now time.Time) Decision {
	recheck := o.Recheck
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	window := o.Window
	if window <= 0 {
		window = DefaultWindow
	}
	d := Decision{Record: self.Record}
	if self.Rolled.IsZero() {
		// Not rolled yet: the record says since when it takes part.
		if d.Record.Seen.IsZero() {
			d.Record.Seen = now.UTC().Truncate(time.Second)
		}
	} else {
		switch {
		case self.State == Failed && d.Record.Failed == "":
			d.Record.Failed = self.Signal
		case self.State == Current && d.Record.Healthy.IsZero() && d.Record.Failed == "":
			d.Record.Healthy = now.UTC().Truncate(time.Second)
		case self.State == InProgress && d.Record.Healthy.IsZero() && d.Record.Failed == "":
			d.Recheck = recheck
		case !d.Record.Healthy.IsZero() && d.Record.Failed == "" && now.Before(d.Record.Healthy.Add(self.BakeTime)):
			// Baking: a rollout that stops being healthy before its bake
			// time is over failed. A container of the new revision in
			// CrashLoopBackOff makes its pod not ready, and the workload
			// no longer available. While its controller has not observed
			// its latest spec, its status says nothing of it: wait.
			switch {
			case self.Unobserved:
				d.Recheck = recheck
			case self.State != Current:
				d.Record.Failed = fmt.Sprintf("unhealthy during the bake time of %s: %s", self.BakeTime, self.Signal)
			default:
				d.Recheck = min(recheck, d.Record.Healthy.Add(self.BakeTime).Sub(now)+time.Second)
			}
		}
	}
	d.Changed = !d.Record.Equal(self.Record)

	members := withSelf(s.Members, self.Workload, d.Record, self)
	halt := s.Halt
	if !halt.Active() && o.HaltAfter > 0 {
		var failed []string
		signal := ""
		for _, m := range members {
			if m.Rolled.IsZero() || m.Failed == "" || (halt != nil && !m.Rolled.After(halt.Resumed)) {
				continue
			}
			failed = append(failed, m.Workload)
			if signal == "" {
				signal = m.Workload + ": " + m.Failed
			}
		}
		if len(failed) >= o.HaltAfter {
			sort.Strings(failed)
			d.Halt = &Halt{Halted: now.UTC().Truncate(time.Second), Failed: failed, Signal: signal}
			if halt != nil {
				d.Halt.Resumed = halt.Resumed
			}
			halt = d.Halt
		}
	}
	if !self.Rolled.IsZero() {
		return d
	}
	if held := d.Record.Halted; !halt.Active() && !held.IsZero() && (halt == nil || halt.Resumed.Before(held)) {
		// Held by a halt that is neither recorded nor resumed since, and
		// no longer derived from the members (its record was refused, then
		// Reroll restarted, and the failed workload is gone): it holds
		// still, and is recorded again.
		d.Halt = &Halt{Halted: held, Signal: fmt.Sprintf("halted at %s; kept by the held workload %s, the halt record was not written", held.UTC().Format(time.RFC3339), self.Workload)}
		if halt != nil {
			d.Halt.Resumed = halt.Resumed
		}
		halt = d.Halt
	}
	d.Record.Halted = time.Time{}
	if halt.Active() {
		d.Record.Halted = halt.Halted
		d.Hold = HoldHalted
		d.Detail = fmt.Sprintf("change set %s is halted: %d rollout(s) failed (%s); resume it with kubectl reroll resume, or supersede it with a new content", s.ID, len(halt.Failed), halt.Signal)
		return d
	}
	pos := d.Record.Position()
	if !o.First.Less(pos) {
		return d
	}
	first := d.Record.Seen
	for _, m := range members {
		if !m.Seen.IsZero() && m.Seen.Before(first) {
			first = m.Seen
		}
	}
	if end := first.Add(window); now.Before(end) {
		d.Hold, d.Until = HoldWave, end
		d.Detail = fmt.Sprintf("change set %s may still gain members in earlier waves until %s", s.ID, end.UTC().Format(time.RFC3339))
		d.Recheck = end.Sub(now) + time.Second
		return d
	}
	var waiting []string
	var until time.Time
	for _, m := range members {
		mp := m.Position()
		if !mp.Less(pos) {
			continue
		}
		switch {
		case m.Rolled.IsZero():
			waiting = append(waiting, m.Workload+" ("+mp.String()+", not rolled)")
		case halt != nil && !halt.Resumed.IsZero() && !m.Rolled.After(halt.Resumed):
			// Rolled before a resume: the operator accepted it as it is.
		case m.Failed != "":
			// The breaker is off (or has not reached its count): a failed
			// rollout no longer holds later waves.
		case m.Healthy.IsZero():
			waiting = append(waiting, m.Workload+" ("+mp.String()+", rolling)")
		case now.Before(m.Healthy.Add(m.BakeTime)):
			waiting = append(waiting, m.Workload+" ("+mp.String()+", baking)")
			if e := m.Healthy.Add(m.BakeTime); e.After(until) {
				until = e
			}
		}
	}
	if len(waiting) == 0 {
		return d
	}
	sort.Strings(waiting)
	d.Hold = HoldWave
	d.Detail = fmt.Sprintf("change set %s waits for the waves before %s: %s", s.ID, pos, strings.Join(waiting, ", "))
	d.Recheck = recheck
	if !until.IsZero() {
		d.Recheck = min(recheck, until.Sub(now)+time.Second)
	}
	return d
}

// withSelf is members with self's entry replaced by (or, when missing,
// added as) its new record.
func withSelf(members []Member, workload string, r Record, self Member) []Member {
	out := make([]Member, 0, len(members)+1)
	for _, m := range members {
		if m.Workload != workload {
			out = append(out, m)
		}
	}
	self.Record = r
	return append(out, self)
}
