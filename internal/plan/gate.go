package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/window"
	"github.com/reroll/reroll/internal/workload"
)

// Annotations of the rollout gates: what holds a planned rollout back.
const (
	// MaxConcurrentRolloutsAnnotation on a Namespace bounds how many
	// rollouts Reroll started run at once in it (a positive integer); the
	// cluster-wide bound is --max-concurrent-rollouts.
	MaxConcurrentRolloutsAnnotation = "reroll.dev/max-concurrent-rollouts"
	// WaitForRolloutAnnotation on a workload, "true" or "false": a change
	// that arrives while the workload's previous rollout is still in
	// progress waits for it to complete (--wait-for-rollout is the default).
	WaitForRolloutAnnotation = "reroll.dev/wait-for-rollout"
	// RolloutWindowAnnotation on a workload or its Namespace (the workload's
	// wins): the weekly windows in which Reroll may start a rollout, in
	// window.Parse's syntax.
	RolloutWindowAnnotation = "reroll.dev/rollout-window"
	// RolloutOverrideAnnotation on a workload, "true": roll at once, past
	// every gate (window, bound, previous rollout, pause period); for
	// emergencies, removed afterwards.
	RolloutOverrideAnnotation = "reroll.dev/rollout-override"
	// PendingAnnotation is written by Reroll on a workload whose rollout is
	// deferred: "<RFC 3339 UTC time of the first deferred change> <reason>
	// sig=<signature>" (see Sign: only a value Reroll signed counts).
	// The record (RecordAnnotation) is left as it was, so the pending change
	// survives a restart and rolls once, with every change made meanwhile;
	// the time orders the waiting workloads, oldest first.
	PendingAnnotation = "reroll.dev/pending"
	// RolledAtAnnotation is written by Reroll with a rollout it started
	// while a bound applies: the RFC 3339 UTC time of the patch, signed
	// ("<time> sig=<signature>", see Sign). The rollout
	// counts as running until the workload's status reports it complete or
	// its deadline passed; Reroll then removes the annotation.
	RolledAtAnnotation = "reroll.dev/rolled-at"
)

// Event reasons of the gates, on the workload.
const (
	// ReasonDeferred is a Normal Event: a rollout waits; the note says
	// why and until when.
	ReasonDeferred = "Deferred"
	// ReasonRolloutTimedOut is a Warning Event: a rollout Reroll started
	// did not complete within its deadline and no longer counts against
	// the bound.
	ReasonRolloutTimedOut = "RolloutTimedOut"
)

// DeferReason says why a rollout waits.
type DeferReason string

// The reasons, in the order the gates are checked.
const (
	// DeferPausePeriod: the kind has no pause of its own (StatefulSets,
	// DaemonSets, Argo Rollouts, custom kinds), so Reroll holds the
	// rollout for the pause period after the first change, then rolls once.
	DeferPausePeriod DeferReason = "pause-period"
	// DeferWindow: outside the rollout window.
	DeferWindow DeferReason = "rollout-window"
	// DeferPreviousRollout: wait-for-rollout, and the previous rollout is
	// still in progress.
	DeferPreviousRollout DeferReason = "previous-rollout"
	// DeferMaxConcurrent: the cluster-wide or namespace bound on concurrent
	// rollouts is reached, or older changes wait for the free slots.
	DeferMaxConcurrent DeferReason = "max-concurrent-rollouts"
)

// Deferral is why and until when a rollout waits.
type Deferral struct {
	// Reason says why; Detail says it in words, for the Event.
	Reason DeferReason
	Detail string
	// Since is when the first deferred change was seen; Until is when the
	// gate opens, zero when that depends on other workloads.
	Since, Until time.Time
}

// Rollouts are the counts behind the concurrent rollout bound, read by the
// caller from the workloads' PendingAnnotation and RolledAtAnnotation and
// their status.
type Rollouts struct {
	// Running and RunningInNamespace count the rollouts Reroll started that
	// are still running (not this workload's), cluster-wide and in the
	// workload's namespace.
	Running, RunningInNamespace int
	// Ahead and AheadInNamespace count the other workloads waiting for a
	// slot (reason DeferMaxConcurrent) whose pending change is older than
	// this one's (PendingSince; ties broken by namespace and name).
	Ahead, AheadInNamespace int
}

// DefaultRecheck is how soon a deferred rollout whose gate depends on other
// workloads (bound, previous rollout) is decided again, by default.
const DefaultRecheck = 5 * time.Second

// DefaultRolloutTimeout is how long a rollout of a kind without a progress
// deadline (StatefulSets, DaemonSets) counts as running at most, by default.
const DefaultRolloutTimeout = 10 * time.Minute

// PendingSince is when the pending change of the workload uid with
// annotations was first deferred, or now when none is (or the value is
// unreadable, or not signed by Reroll under k).
func PendingSince(k digest.Key, uid string, annotations map[string]string, now time.Time) time.Time {
	v, _ := Verified(k, uid, PendingAnnotation, annotations)
	since, _, ok := parsePending(v)
	if !ok {
		return now
	}
	return since
}

// PendingReason is the reason in a workload's PendingAnnotation, "" when
// none is pending (or it is not signed by Reroll under k).
func PendingReason(k digest.Key, uid string, annotations map[string]string) DeferReason {
	v, _ := Verified(k, uid, PendingAnnotation, annotations)
	_, reason, _ := parsePending(v)
	return reason
}

// DisplayedPendingReason is the reason of the pending change in annotations,
// read without checking its signature: for what a user is shown (the
// kubectl plugin cannot read the installation key), never for a decision of
// Reroll's own (PendingReason).
func DisplayedPendingReason(annotations map[string]string) DeferReason {
	_, reason, _ := parsePending(Displayed(annotations, PendingAnnotation))
	return reason
}

func parsePending(v string) (time.Time, DeferReason, bool) {
	at, reason, _ := strings.Cut(v, " ")
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, "", false
	}
	return t, DeferReason(reason), true
}

// RolledAt is the time in the RolledAtAnnotation of the workload uid with
// annotations; false when there is none (or it is unreadable, or not
// signed by Reroll under k).
func RolledAt(k digest.Key, uid string, annotations map[string]string) (time.Time, bool) {
	v, _ := Verified(k, uid, RolledAtAnnotation, annotations)
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// RolloutDeadline is how long a rollout of a workload with progress p counts
// as running at most: the kind's own deadline, else timeout (else
// DefaultRolloutTimeout).
func RolloutDeadline(p workload.Progress, timeout time.Duration) time.Duration {
	switch {
	case p.Deadline > 0:
		return p.Deadline
	case timeout > 0:
		return timeout
	}
	return DefaultRolloutTimeout
}

// bound is the namespace's and the cluster's bound on concurrent rollouts;
// 0 is none. A malformed namespace value is reported and ignored.
func (o Options) bounds(in Input) (cluster, namespace int, problem error) {
	cluster = max(o.MaxConcurrentRollouts, 0)
	if v, ok := in.NamespaceAnnotations[MaxConcurrentRolloutsAnnotation]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return cluster, 0, fmt.Errorf("namespace annotation %s: %q is not a positive integer", MaxConcurrentRolloutsAnnotation, v)
		}
		namespace = n
	}
	return cluster, namespace, nil
}

// Bounded reports whether rollouts of the workload count against a bound:
// its kind reports progress and a bound applies to it.
func (o Options) Bounded(in Input) bool {
	cluster, namespace, _ := o.bounds(in)
	return in.Progress != nil && (cluster > 0 || namespace > 0)
}

// gate decides whether a planned rollout may start now; nil when it may.
// Malformed gate annotations are reported as Warnings and ignored.
func (p *Plan) gate(o Options, in Input, optIn annotation.OptIn) *Deferral {
	if in.Annotations[RolloutOverrideAnnotation] == "true" {
		return nil
	}
	since := PendingSince(o.Key, in.UID, in.Annotations, in.Now)
	d := &Deferral{Since: since}
	if !in.Pausable && optIn.PausePeriod > 0 {
		if end := since.Add(optIn.PausePeriod); in.Now.Before(end) {
			d.Reason, d.Until = DeferPausePeriod, end
			d.Detail = fmt.Sprintf("the pause period of %s after the first change", optIn.PausePeriod)
			return d
		}
	}
	if spec, where := windowSpec(in); spec != "" {
		ws, err := window.Parse(spec)
		if err != nil {
			p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, fmt.Sprintf("Ignoring %s on the %s: %s", RolloutWindowAnnotation, where, err.Error())})
		} else if open, until := ws.At(in.Now); !open {
			d.Reason, d.Until = DeferWindow, until
			d.Detail = "outside the rollout window " + strings.TrimSpace(spec) + " (on the " + where + ")"
			return d
		}
	}
	wait := o.WaitForRollout
	if v, ok := in.Annotations[WaitForRolloutAnnotation]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, fmt.Sprintf("Ignoring %s: %q is not true or false", WaitForRolloutAnnotation, v)})
		} else {
			wait = b
		}
	}
	if wait && in.Progress != nil && !in.Progress.Done && !in.Progress.Failed {
		d.Reason, d.Detail = DeferPreviousRollout, "the previous rollout is still in progress"
		return d
	}
	cluster, namespace, err := o.bounds(in)
	if err != nil {
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring " + err.Error()})
	}
	if in.Progress == nil {
		return nil
	}
	r := in.Rollouts
	switch {
	case cluster > 0 && r.Running+r.Ahead >= cluster:
		d.Reason = DeferMaxConcurrent
		d.Detail = fmt.Sprintf("%d rollouts run and %d older changes wait, at most %d run at once (--max-concurrent-rollouts)", r.Running, r.Ahead, cluster)
		return d
	case namespace > 0 && r.RunningInNamespace+r.AheadInNamespace >= namespace:
		d.Reason = DeferMaxConcurrent
		d.Detail = fmt.Sprintf("%d rollouts run and %d older changes wait in the namespace, at most %d run at once (%s)", r.RunningInNamespace, r.AheadInNamespace, namespace, MaxConcurrentRolloutsAnnotation)
		return d
	}
	return nil
}

// windowSpec is the workload's rollout window, else its Namespace's, and
// where it was found.
func windowSpec(in Input) (string, string) {
	if v := in.Annotations[RolloutWindowAnnotation]; strings.TrimSpace(v) != "" {
		return v, "workload"
	}
	if v := in.NamespaceAnnotations[RolloutWindowAnnotation]; strings.TrimSpace(v) != "" {
		return v, "namespace"
	}
	return "", ""
}

// deferTo turns a planned rollout into a DeferredRollout plan: the record stays as it
// was (the change stays pending, on the object), PendingAnnotation says
// since when and why, and an Event says so whenever that changes.
func (p *Plan) deferTo(o Options, in Input, d Deferral, summary string) {
	p.Outcome, p.Deferral = DeferredRollout, &d
	p.Annotations = map[string]string{}
	p.Events, p.Alert = nil, nil
	value := Sign(o.Key, in.UID, PendingAnnotation, d.Since.UTC().Format(time.RFC3339)+" "+string(d.Reason))
	if in.Annotations[PendingAnnotation] != value {
		p.Annotations[PendingAnnotation] = value
		note := "Deferred the rollout after " + summary + ": " + d.Detail
		if !d.Until.IsZero() {
			note += "; until " + d.Until.UTC().Format(time.RFC3339)
		}
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonDeferred, note})
	}
	recheck := o.Recheck
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	if !d.Until.IsZero() {
		// Until the gate opens: a change of the workload's annotations, or
		// of its Namespace's (watched), decides again before that.
		recheck = d.Until.Sub(in.Now)
		// The opening second itself: Until is exact, a requeue may fire a
		// little early.
		recheck = max(recheck, 0) + time.Second
	}
	p.Recheck = recheck
}

// track keeps RolledAtAnnotation and PendingAnnotation true to the plan: a
// rollout under a bound is stamped; a finished or timed-out one is no longer
// counted (with a Warning Event for the latter), a running one is checked
// again; a pending change that no longer rolls anything is cleared.
func (p *Plan) track(o Options, in Input) {
	if p.Outcome == Deleting || p.Outcome == Refused {
		return
	}
	// Once the plan's own writes are known: what it does not write anew of
	// a forged state goes.
	defer p.forged(o, in)
	if p.Outcome == Roll {
		if o.Bounded(in) {
			p.Annotations[RolledAtAnnotation] = Sign(o.Key, in.UID, RolledAtAnnotation, in.Now.UTC().Format(time.RFC3339))
			p.Recheck = minPositive(p.Recheck, recheckOf(o))
		}
		if _, ok := in.Annotations[PendingAnnotation]; ok {
			p.Annotations[PendingAnnotation] = ""
		}
		return
	}
	if _, ok := in.Annotations[PendingAnnotation]; ok && p.Outcome != DeferredRollout && p.Outcome != Waiting && p.Outcome != Refused {
		p.Annotations[PendingAnnotation] = ""
	}
	at, ok := RolledAt(o.Key, in.UID, in.Annotations)
	if _, has := in.Annotations[RolledAtAnnotation]; !has {
		return
	}
	switch {
	case !ok || in.Progress == nil || in.Progress.Done:
		p.Annotations[RolledAtAnnotation] = ""
	case !in.Now.Before(at.Add(RolloutDeadline(*in.Progress, o.RolloutTimeout))):
		p.Annotations[RolledAtAnnotation] = ""
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonRolloutTimedOut,
			fmt.Sprintf("The rollout started at %s did not complete within %s; it no longer counts against the concurrent rollout bound", at.UTC().Format(time.RFC3339), RolloutDeadline(*in.Progress, o.RolloutTimeout))})
	default:
		p.Recheck = minPositive(p.Recheck, min(recheckOf(o), at.Add(RolloutDeadline(*in.Progress, o.RolloutTimeout)).Sub(in.Now)))
	}
}

func recheckOf(o Options) time.Duration {
	if o.Recheck > 0 {
		return o.Recheck
	}
	return DefaultRecheck
}

// minPositive is the smaller of two durations, ignoring those not positive.
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Hold turns a plan that would roll into a DeferredRollout held by a gate
// decided outside the planner (safe delivery's waves and halts,
// internal/delivery), as the planner's own gates do: only
// PendingAnnotation is written, and the change rolls later, once.
func (p *Plan) Hold(o Options, in Input, d Deferral) {
	p.deferTo(o, in, d, p.Change.Summary())
	// A pause period starts with the rollout, not with its hold.
	p.Pause = Pause{}
	p.track(o, in)
}
