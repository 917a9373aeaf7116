package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// ReasonPinned is a Normal Event: Reroll pinned a versioned workload's
// ConfigMaps and Secrets to immutable copies without a change of their
// content (the workload opted in, or was first seen); its pods restart
// once to read the copies (a CronJob's do not: its next Jobs read them). A
// rollout for a change says so in its Rolled Event instead (a CronJob
// that creates no Job, in its NotRolled Event).
const ReasonPinned = "Pinned"

// ReasonUnpinned is a Warning Event: a copy could not be made (a
// ResourceQuota, a denied permission, a Secret whose type Reroll does not
// copy, a name taken by an object that is no copy Reroll made); the
// workload rolls anyway, reading the source itself, so the change is never
// lost. The note says why.
const ReasonUnpinned = "Unpinned"

// Pinning is what a plan does for versioned config: the copies to make
// before the workload's write, and the pod template references to rename
// in that write (with the trigger).
type Pinning struct {
	// Copies are the copies to make (pin.Build from the source read from
	// the API), one per source, sorted by kind and source.
	Copies []PinCopy
	// Renames maps each reference as the template names it (a source, or
	// a copy of an older content) to the name it gets: a copy's, or, when
	// the workload no longer pins, the source's.
	Renames map[pin.Ref]string
	// Sources maps every copy the template may name after the renames (the
	// ones it names now and the new ones) to its source's name, for the
	// template's pin.TemplateAnnotation (pin.FormatPins).
	Sources map[pin.Ref]string
	// Quiet is set when the pinning rides on no change (an opt-in, a first
	// sight): only direct references to sources are renamed.
	Quiet bool
}

// PinCopy is one copy to make.
type PinCopy struct {
	// Kind is the source's and the copy's kind.
	Kind reference.Kind
	// Source is the source's name; Name the copy's (pin.Name of the
	// source's digests in the Source Decide read).
	Source, Name string
}

// Fallback returns the renames and pin.TemplateAnnotation value of p once
// the copies in failed could not be made: a reference that was to name one
// of them names its source instead (the workload reads the source, so the
// change still reaches it), and the annotation lists the copies that the
// template names after the renames. spec is the template's pod spec before
// the renames.
func (p *Pinning) Fallback(spec *corev1.PodSpec, failed map[pin.Ref]bool) (renames map[pin.Ref]string, annotation string) {
	renames = make(map[pin.Ref]string, len(p.Renames))
	for from, to := range p.Renames {
		if failed[pin.Ref{Kind: from.Kind, Name: to}] {
			to = p.Sources[pin.Ref{Kind: from.Kind, Name: to}]
		}
		renames[from] = to
	}
	after := spec.DeepCopy()
	pin.Rewrite(after, renames)
	pins := map[pin.Ref]string{}
	cms, secrets := pin.Referenced(after)
	for _, names := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, cms}, {reference.Secret, secrets}} {
		for _, n := range names.names {
			if src, ok := p.Sources[pin.Ref{Kind: names.kind, Name: n}]; ok {
				pins[pin.Ref{Kind: names.kind, Name: src}] = n
			}
		}
	}
	return renames, pin.FormatPins(pins)
}

// sourceView returns in's pod template as it would be unpinned: each
// reference to a copy (in.Pins) renamed to its source. in.Template when
// it names no copy.
func sourceView(in Input) *corev1.PodTemplateSpec {
	if len(in.Pins) == 0 {
		return in.Template
	}
	t := in.Template.DeepCopy()
	pin.Rewrite(&t.Spec, in.Pins)
	return t
}

// DefaultOptInPins is how many opt-in pins (a versioned workload first
// seen, or opting in, whose pods restart once to read the copies) run at
// once when --max-concurrent-rollouts sets no bound: a cluster that turns
// versioned config on does not restart every workload at once. Half of it
// in one namespace (NamespaceShare). An opt-in pin counts as a running
// rollout (RolledAtAnnotation) like any other, so under
// --max-concurrent-rollouts it takes one of its slots instead.
const DefaultOptInPins = 10

// optInBound returns o with the concurrent rollout bound an opt-in pin
// waits for: o's --max-concurrent-rollouts, or DefaultOptInPins without
// one.
func (o Options) optInBound() Options {
	if o.MaxConcurrentRollouts <= 0 {
		o.MaxConcurrentRollouts = DefaultOptInPins
	}
	return o
}

// OptInRecheck is how soon an opt-in pin held by the previous rollout
// (wait-for-rollout) is decided again: six times the recheck of a
// waiting rollout (30 s by default). An opt-in waits with nothing written
// on the workload (a rollout for a change writes PendingAnnotation), so
// that a cluster turning versioned config on writes each workload once,
// when it pins.
func OptInRecheck(o Options) time.Duration { return 6 * recheckOf(o) }

// OptInFallback is how soon an opt-in pin waiting for a slot of the bound
// is decided again when nothing wakes it first: the writer notes it
// (Plan.OptInWaits) and a freed slot wakes it, after the changes that
// wait; this recheck covers a restart (which forgets the notes) or a
// wake-up dropped. Thousands of workloads waiting at install then cost a
// few reconciles a second, not hundreds.
const OptInFallback = 5 * time.Minute

// PinsQuietly reports whether p is an opt-in pin (a versioned workload
// first seen or opting in) that counts against the bound: a caller that
// decided without the bound's counts (Options.Bounded was false) takes the
// bound's lock, counts, and decides again, so that two opt-ins cannot
// take one slot.
func (p Plan) PinsQuietly() bool {
	return p.Pin != nil && p.Pin.Quiet && p.Annotations[RolledAtAnnotation] != ""
}

// pinning decides the pinning of a workload whose template is its own
// (Deployments, StatefulSets, DaemonSets, Argo Rollouts with a template;
// in.Restart.TemplateInObject) or a CronJob's jobTemplate
// (in.Restart.JobTemplate), and that Reroll may still change (no
// revert.RevertedAnnotation):
//   - a rollout (Outcome Roll, ByTemplate) of a versioned workload renames
//     each selected ConfigMap and Secret of its namespace that the
//     template consumes (directly or through an older copy) to the copy of
//     its current content; of a workload no longer versioned, its copies
//     back to the sources. A CronJob's change does the same in its
//     jobTemplate, whether it creates a Job at once (ByJob, the Job is
//     made from the pinned template) or not (NotRolled): its next Jobs
//     read the new copy, the Jobs running keep theirs;
//   - a versioned workload first seen, or unchanged, whose template names a
//     source directly pins it (Quiet: an opt-in; its pods restart once,
//     after the gates a rollout waits for; a CronJob's pods do not, and
//     its pinning waits for nothing), so that the first undo already
//     restores content. References to older copies are left alone: that
//     is an undo, the user's choice, kept until the source changes again.
//
// A selected object that does not exist or cannot be read is not pinned.
// Only the objects selected (those whose changes roll the workload) are
// pinned: a copy of anything else would hold the pods on its content with
// nothing to move them on.
func (p *Plan) pinning(o Options, in Input, v View) error {
	if in.Restart == nil || !in.Restart.TemplateInObject && !in.Restart.JobTemplate || in.Annotations[revert.RevertedAnnotation] != "" || p.Hold != "" || p.Undo != nil {
		return nil
	}
	jobs := in.Restart.JobTemplate
	versioned, problems := pin.Versioned(in.Annotations, in.NamespaceAnnotations, o.Versioned)
	// A kind whose older revisions the garbage collection does not read is
	// never pinned; one pinned before is moved back to its sources by its
	// next rollout, as a workload no longer versioned.
	versioned = versioned && !in.Restart.HistoryUnread
	p.versioned = versioned
	rolling := p.Outcome == Roll && p.Roll.Way == workload.ByTemplate
	if jobs {
		// A change answered, with a Job created at once or not.
		rolling = p.Outcome == Roll && p.Roll.Way == workload.ByJob || p.Outcome == NotRolled && len(p.Changes) > 0
	}
	// An opt-in pins a template never pinned (no pin.TemplateAnnotation):
	// one that was, and names a source directly, rolled unpinned because a
	// copy could not be made, and is pinned again by its next rollout, not
	// by every reconcile meanwhile.
	quiet := versioned && (p.Outcome == FirstSight || p.Outcome == Unchanged) && in.Template.Annotations[pin.TemplateAnnotation] == ""
	if len(problems) > 0 && (rolling || quiet) {
		p.Problems = append(p.Problems, problems...)
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring malformed annotations: " + errors.Join(problems...).Error()})
	}
	if !rolling && !quiet || !versioned && len(in.Pins) == 0 {
		return nil
	}
	if !rolling && !jobs {
		// An opt-in restarts the pods like a rollout: it waits for the
		// same gates (windows, the previous rollout, the bound, at least
		// DefaultOptInPins at once), on a plan of its own so that their
		// warnings are not told twice. A CronJob's restarts nothing.
		var q Plan
		if d := q.gate(o.optInBound(), in, p.OptIn); d != nil {
			switch {
			case d.Reason == DeferMaxConcurrent:
				// Woken when a slot frees (OptInWaits); the recheck is
				// the fall-back after a restart or a wake-up dropped.
				p.OptInWaits = true
				p.Recheck = minPositive(p.Recheck, OptInFallback)
			case !d.Until.IsZero():
				p.Recheck = minPositive(p.Recheck, max(d.Until.Sub(in.Now), 0)+time.Second)
			default:
				p.Recheck = minPositive(p.Recheck, OptInRecheck(o))
			}
			return nil
		}
	}
	// The names the template gives each source: its own, its copies'.
	names := map[pin.Ref][]string{}
	cms, secrets := pin.Referenced(&in.Template.Spec)
	for _, kn := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, cms}, {reference.Secret, secrets}} {
		for _, n := range kn.names {
			src := n
			if s, ok := in.Pins[pin.Ref{Kind: kn.kind, Name: n}]; ok {
				src = s
			}
			k := pin.Ref{Kind: kn.kind, Name: src}
			names[k] = append(names[k], n)
		}
	}
	step := &Pinning{Renames: map[pin.Ref]string{}, Sources: maps.Clone(in.Pins), Quiet: !rolling}
	if step.Sources == nil {
		step.Sources = map[pin.Ref]string{}
	}
	for _, r := range p.References {
		if (r.Kind != reference.ConfigMap && r.Kind != reference.Secret) || r.Namespace != "" {
			continue
		}
		src := pin.Ref{Kind: r.Kind, Name: r.Name}
		current := names[src]
		if len(current) == 0 {
			// Selected by a list, not consumed by the template.
			continue
		}
		want := r.Name
		if versioned {
			obj, ok, err := v.Object(r.Kind, in.Namespace, r.Name)
			if errors.Is(err, ErrUnreadable) || err == nil && !ok {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading %s %s/%s to pin it: %w", r.Kind, in.Namespace, r.Name, err)
			}
			want = pin.Name(o.Key, r.Kind, in.Namespace, r.Name, obj.Data.Keys)
		}
		renamed := false
		for _, n := range current {
			if n == want || quiet && !rolling && n != r.Name {
				continue
			}
			step.Renames[pin.Ref{Kind: r.Kind, Name: n}] = want
			renamed = true
		}
		if renamed && want != r.Name {
			step.Copies = append(step.Copies, PinCopy{Kind: r.Kind, Source: r.Name, Name: want})
			step.Sources[pin.Ref{Kind: r.Kind, Name: want}] = r.Name
		}
	}
	if len(step.Renames) == 0 {
		return nil
	}
	p.Pin = step
	var notes []string
	for _, c := range step.Copies {
		notes = append(notes, fmt.Sprintf("%s %s to %s", c.Kind, c.Source, c.Name))
	}
	slices.Sort(notes)
	switch {
	case step.Quiet && jobs:
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonPinned, "Pinned " + strings.Join(notes, ", ") + " in the jobTemplate; the next Jobs read the copies"})
	case step.Quiet:
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonPinned, "Pinned " + strings.Join(notes, ", ") + "; its pods restart once to read the copies"})
		if in.Progress != nil {
			// A rollout that counts against the bound until the status
			// reports it complete (track clears the stamp then).
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[RolledAtAnnotation] = Sign(o.Key, in.UID, RolledAtAnnotation, in.Now.UTC().Format(time.RFC3339))
			p.Recheck = minPositive(p.Recheck, recheckOf(o))
		}
	case len(notes) > 0:
		for i := range p.Events {
			if r := p.Events[i].Reason; r == ReasonRolled || jobs && r == ReasonNotRolled {
				p.Events[i].Note += "; pinned " + strings.Join(notes, ", ")
			}
		}
	}
	return nil
}

// PinsOf returns Input.Pins of the pod template t of a workload in
// namespace: each ConfigMap and Secret it names that is a copy made under
// k (pin.VerifyDigests of what src holds of it) to its source's name, and
// each name src does not hold that the template's pin.TemplateAnnotation
// claims is a copy, to the source claimed (a copy just made, which the
// cache has not seen yet; a claim is only trusted to name a source in the
// same namespace, which the template could name itself). An object src
// may not read counts as no copy. It returns an error when src fails
// otherwise.
func PinsOf(src Source, k digest.Key, namespace string, t *corev1.PodTemplateSpec) (map[pin.Ref]string, error) {
	if t == nil {
		return nil, nil
	}
	claims, _ := pin.ParsePins(t.Annotations[pin.TemplateAnnotation])
	claimed := make(map[pin.Ref]string, len(claims))
	for s, c := range claims {
		claimed[pin.Ref{Kind: s.Kind, Name: c}] = s.Name
	}
	var out map[pin.Ref]string
	cms, secrets := pin.Referenced(&t.Spec)
	for _, kn := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, cms}, {reference.Secret, secrets}} {
		for _, n := range kn.names {
			r := pin.Ref{Kind: kn.kind, Name: n}
			o, ok, err := src.Object(kn.kind, namespace, n)
			if errors.Is(err, ErrUnreadable) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s %s/%s: %w", kn.kind, namespace, n, err)
			}
			source := ""
			if ok {
				// Only an object with both copy annotations can verify:
				// the others (nearly all) skip the error VerifyDigests
				// would build to say so.
				if o.Annotations[pin.AnnotationCopyOf] == "" || o.Annotations[pin.AnnotationSignature] == "" {
					continue
				}
				if c, err := pin.VerifyDigests(k, kn.kind, namespace, n, o.Annotations, o.Data.Keys); err == nil {
					source = c.Source
				}
			} else {
				source = claimed[r]
			}
			if source != "" {
				if out == nil {
					out = map[pin.Ref]string{}
				}
				out[r] = source
			}
		}
	}
	return out, nil
}
