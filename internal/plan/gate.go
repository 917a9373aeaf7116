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
	// RolloutOverrideAnnotation, "true": roll at once, past every gate
	// (window, bound, previous rollout, pause period, waves, storm
	// breaker); for emergencies, removed afterwards. Where it is honoured
	// is --rollout-override (OverrideScope): by default only on a
	// Namespace, which tenants with edit rights cannot annotate.
	RolloutOverrideAnnotation = "reroll.dev/rollout-override"
	// PendingAnnotation is written by Reroll on a workload whose rollout is
	// deferred: "<RFC 3339 UTC time of the first deferred change> <reason>
	// <RFC 3339 UTC expiry> sig=<signature>" (see Sign: only a value Reroll
	// signed counts, and only until its expiry, PendingValidity after
	// Reroll signed it; Reroll signs it again while the change waits, so a
	// value copied and written back later counts for nothing).
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

// PendingValidity is how long a PendingAnnotation counts after Reroll
// signed it, for a rollout timeout of timeout (--rollout-timeout; 0 means
// DefaultRolloutTimeout): the timeout itself, at least 10 seconds. A waiting
// workload's value is signed again once half of it has passed (one
// metadata patch per workload per half validity), so an honest wait never
// lapses while Reroll runs; a value copied from the workload and written
// back later (a replay) has lapsed, and counts for nothing.
func PendingValidity(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultRolloutTimeout
	}
	return max(timeout, 10*time.Second)
}

// Pending is the pending change of the workload uid with annotations at
// now: since when it waits and why; ok is false when none is, or the value
// is unreadable, not signed by Reroll under k (a forged one), or expired (a
// replayed one, or one left by a Reroll that stopped longer ago than its
// validity).
func Pending(k digest.Key, uid string, annotations map[string]string, now time.Time) (since time.Time, reason DeferReason, ok bool) {
	v, _ := Verified(k, uid, PendingAnnotation, annotations)
	since, reason, expires, ok := parsePending(v)
	if !ok || !now.Before(expires) {
		return time.Time{}, "", false
	}
	return since, reason, true
}

// PendingSince is when the pending change of the workload uid with
// annotations was first deferred, or now when none is at now (see
// Pending).
func PendingSince(k digest.Key, uid string, annotations map[string]string, now time.Time) time.Time {
	since, _, ok := Pending(k, uid, annotations, now)
	if !ok {
		return now
	}
	return since
}

// PendingReason is the reason in a workload's PendingAnnotation, "" when
// none is pending (or it is not signed by Reroll under k). It does not
// check the expiry (an index cannot: it has no clock); use Pending for a
// decision at a time.
func PendingReason(k digest.Key, uid string, annotations map[string]string) DeferReason {
	v, _ := Verified(k, uid, PendingAnnotation, annotations)
	_, reason, _, _ := parsePending(v)
	return reason
}

// DisplayedPendingReason is the reason of the pending change in annotations,
// read without checking its signature: for what a user is shown (the
// kubectl plugin cannot read the installation key), never for a decision of
// Reroll's own (PendingReason).
func DisplayedPendingReason(annotations map[string]string) DeferReason {
	_, reason, _, _ := parsePending(Displayed(annotations, PendingAnnotation))
	return reason
}

// formatPending is the unsigned value of PendingAnnotation.
func formatPending(since time.Time, reason DeferReason, expires time.Time) string {
	return since.UTC().Format(time.RFC3339) + " " + string(reason) + " " + expires.UTC().Format(time.RFC3339)
}

// parsePending reads "<since> <reason> <expires>"; a value of an older
// Reroll, "<since> <reason>", reads with the zero expiry (expired). ok is
// false when since is unreadable.
func parsePending(v string) (since time.Time, reason DeferReason, expires time.Time, ok bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return time.Time{}, "", time.Time{}, false
	}
	since, err := time.Parse(time.RFC3339, f[0])
	if err != nil {
		return time.Time{}, "", time.Time{}, false
	}
	if len(f) >= 3 {
		if e, err := time.Parse(time.RFC3339, f[len(f)-1]); err == nil {
			expires, f = e, f[:len(f)-1]
		}
	}
	return since, DeferReason(strings.Join(f[1:], " ")), expires, true
}

// RolledAt is the time in the RolledAtAnnotation of the workload uid with
// annotations; false when there is none (or it is unreadable, or not
// signed by Reroll under k).
func RolledAt(k digest.Key, uid string, annotations map[string]string) (time.Time, bool) {
	if annotations[RolledAtAnnotation] == "" {
		// None: as time.Parse of "", without verifying or parsing.
		return time.Time{}, false
	}
	v, _ := Verified(k, uid, RolledAtAnnotation, annotations)
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// RolloutDeadline is how long a rollout of a workload with progress p counts
// against the bound at most: the kind's own deadline
// (progressDeadlineSeconds) when it is shorter than timeout
// (--rollout-timeout; 0 means DefaultRolloutTimeout), else timeout. The
// deadline is the tenant's to write (2147483647 seconds is 68 years), so it
// never holds a slot longer than the operator's timeout.
func RolloutDeadline(p workload.Progress, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultRolloutTimeout
	}
	if p.Deadline > 0 && p.Deadline < timeout {
		return p.Deadline
	}
	return timeout
}

// OverrideScope is where RolloutOverrideAnnotation is honoured
// (--rollout-override).
type OverrideScope string

// The scopes.
const (
	// OverrideNamespace, the default: only on the workload's Namespace
	// (for every workload in it). Tenants with edit rights cannot annotate
	// Namespaces; the annotation on a workload is ignored.
	OverrideNamespace OverrideScope = "namespace"
	// OverrideWorkload: on the workload too (Reroll's behaviour before
	// this flag): whoever edits a workload may roll it past every gate,
	// and its rollout takes a slot of the bound whatever the bound says.
	OverrideWorkload OverrideScope = "workload"
	// OverrideOff: nowhere.
	OverrideOff OverrideScope = "off"
)

// ParseOverrideScope reads --rollout-override; "" is OverrideNamespace.
func ParseOverrideScope(v string) (OverrideScope, error) {
	switch s := OverrideScope(v); s {
	case "":
		return OverrideNamespace, nil
	case OverrideNamespace, OverrideWorkload, OverrideOff:
		return s, nil
	}
	return "", fmt.Errorf("%q is not one of namespace, workload, off", v)
}

// Overridden reports whether the workload in rolls past every gate:
// RolloutOverrideAnnotation is "true" where o.Override honours it.
func (o Options) Overridden(in Input) bool {
	switch o.Override {
	case OverrideOff:
		return false
	case OverrideWorkload:
		if in.Annotations[RolloutOverrideAnnotation] == "true" {
			return true
		}
	}
	return in.NamespaceAnnotations[RolloutOverrideAnnotation] == "true"
}

// NamespaceShare is the default bound of one namespace under a
// cluster-wide bound of cluster (--max-concurrent-rollouts) when
// --max-concurrent-rollouts-per-namespace is 0: half of it, rounded up, so
// that one namespace cannot take every slot once there are two; 0 (none)
// without a cluster-wide bound.
func NamespaceShare(cluster int) int {
	if cluster <= 0 {
		return 0
	}
	return (cluster + 1) / 2
}

// bounds is the cluster's and the workload's namespace's bound on
// concurrent rollouts; 0 is none. A malformed namespace value is reported
// and ignored.
func (o Options) bounds(in Input) (cluster, namespace int, problem error) {
	namespace, problem = o.NamespaceBound(in.NamespaceAnnotations)
	return max(o.MaxConcurrentRollouts, 0), namespace, problem
}

// NamespaceBound is the bound on concurrent rollouts of a namespace with
// annotations: its share of the cluster-wide bound
// (MaxConcurrentRolloutsPerNamespace, else NamespaceShare), lowered by its
// MaxConcurrentRolloutsAnnotation; without a cluster-wide bound, the
// annotation alone. 0 is none. A malformed annotation is returned as
// problem and ignored.
func (o Options) NamespaceBound(annotations map[string]string) (bound int, problem error) {
	if o.MaxConcurrentRollouts > 0 {
		bound = o.MaxConcurrentRolloutsPerNamespace
		if bound <= 0 {
			bound = NamespaceShare(o.MaxConcurrentRollouts)
		}
		bound = min(bound, o.MaxConcurrentRollouts)
	}
	if v, ok := annotations[MaxConcurrentRolloutsAnnotation]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return bound, fmt.Errorf("namespace annotation %s: %q is not a positive integer", MaxConcurrentRolloutsAnnotation, v)
		}
		if bound == 0 || n < bound {
			bound = n
		}
	}
	return bound, nil
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
	if o.Overridden(in) {
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
		d.Detail = fmt.Sprintf("%d rollouts run and %d older changes wait in the namespace, at most %d run at once in one namespace (--max-concurrent-rollouts-per-namespace, %s)", r.RunningInNamespace, r.AheadInNamespace, namespace, MaxConcurrentRolloutsAnnotation)
		return d
	}
	return nil
}

// ignoredOverride is the note of a deferral of a workload that carries
// RolloutOverrideAnnotation where --rollout-override does not honour it.
func ignoredOverride(o Options, in Input) string {
	if in.Annotations[RolloutOverrideAnnotation] != "true" || o.Overridden(in) {
		return ""
	}
	return " (" + RolloutOverrideAnnotation + " on the workload is ignored: --rollout-override=" + string(o.override()) + " honours it only on the Namespace, or nowhere)"
}

// override is o.Override with its default.
func (o Options) override() OverrideScope {
	if o.Override == "" {
		return OverrideNamespace
	}
	return o.Override
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
	validity := PendingValidity(o.RolloutTimeout)
	since, reason, current := Pending(o.Key, in.UID, in.Annotations, in.Now)
	same := current && since.Equal(d.Since.Truncate(time.Second)) && reason == d.Reason
	if !same || !pendingFresh(o.Key, in, validity) {
		// A new deferral, or the same one signed again before it lapses.
		p.Annotations[PendingAnnotation] = Sign(o.Key, in.UID, PendingAnnotation, formatPending(d.Since, d.Reason, in.Now.Add(validity)))
	}
	if !same {
		note := "Deferred the rollout after " + summary + ": " + d.Detail + ignoredOverride(o, in)
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
	// Decided again in time to sign the value again before it lapses: it is
	// signed again once half its validity passed, and a quarter after that
	// it still holds.
	p.Recheck = min(recheck, validity/4)
}

// pendingFresh reports whether the workload's PendingAnnotation has more
// than half of validity left at in.Now.
func pendingFresh(k digest.Key, in Input, validity time.Duration) bool {
	v, _ := Verified(k, in.UID, PendingAnnotation, in.Annotations)
	_, _, expires, ok := parsePending(v)
	return ok && in.Now.Add(validity/2).Before(expires)
}

// track keeps RolledAtAnnotation and PendingAnnotation true to the plan: a
// rollout under a bound is stamped; a finished or timed-out one is no longer
// counted (with a Warning Event for the latter), a running one is checked
// again; a pending change that no longer rolls anything is cleared.
func (p *Plan) track(o Options, in Input) {
	if p.Outcome == Deleting {
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
	if _, ok := in.Annotations[PendingAnnotation]; ok && p.Outcome != DeferredRollout {
		// Nothing waits for a slot: a Waiting (Wave's missing objects) or
		// Refused workload rolls nothing until it is decided again, so a
		// pending change kept there would queue ahead of every newer one.
		p.Annotations[PendingAnnotation] = ""
	}
	if _, has := in.Annotations[RolledAtAnnotation]; !has {
		return
	}
	at, ok := RolledAt(o.Key, in.UID, in.Annotations)
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

// holdBack turns a plan that would roll into a DeferredRollout held by a
// gate decided after DecideChange (safe delivery's waves and halts,
// internal/delivery; the storm breaker), as DecideChange's own gates do:
// only PendingAnnotation is written, and the change rolls later, once.
func (p *Plan) holdBack(o Options, in Input, d Deferral) {
	p.deferTo(o, in, d, p.Change.Summary())
	// A pause period starts with the rollout, not with its hold.
	p.Pause = Pause{}
	p.track(o, in)
}
