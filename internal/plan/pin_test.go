package plan

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// TestDecide_Pinning checks the pinning of versioned config: which
// references a plan renames to which copies, and when it leaves them.
func TestDecide_Pinning(t *testing.T) {
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := obj(map[string]string{"a": "1"}, nil, "1")
	v2 := obj(map[string]string{"a": "2"}, nil, "2")
	copyOf := func(o Object) string { return pin.Name(k, reference.ConfigMap, "ns", "cfg", o.Data.Keys) }
	copy1, copy2 := copyOf(v1), copyOf(v2)
	ref := func(name string) pin.Ref { return pin.Ref{Kind: reference.ConfigMap, Name: name} }
	versioned := map[string]string{pin.VersionedAnnotation: "true"}
	cases := map[string]struct {
		opts      func(*Options)    // changes to the default options (with the key)
		names     string            // the name the template gives cfg: "cfg", or a copy's
		changed   bool              // cfg changed (v1 to v2) since the record
		workload  map[string]string // more workload annotations
		namespace map[string]string // the Namespace's annotations
		input     func(*Input)      // last changes to the Input
		want      Outcome           // the plan's outcome
		renames   map[pin.Ref]string
		copies    []PinCopy
		check     func(*testing.T, Plan) // further checks; may be nil
	}{
		"a versioned rollout pins the source to the copy of its new content": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if !hasEventWith(p.Events, ReasonRolled, "pinned ConfigMap cfg to "+copy2) {
					t.Errorf("the Rolled Event names the copy: %+v", p.Events)
				}
			},
		},
		"a pinned workload rolls when its source changes, from the older copy to the new one": {
			names: copy1, changed: true, workload: versioned, want: Roll,
			renames: map[pin.Ref]string{ref(copy1): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if p.Pin.Sources[ref(copy1)] != "cfg" || p.Pin.Sources[ref(copy2)] != "cfg" {
					t.Errorf("sources = %v", p.Pin.Sources)
				}
			},
		},
		"an opt-in pins what the template names, without a change": {
			names: "cfg", workload: versioned, want: Unchanged,
			renames: map[pin.Ref]string{ref("cfg"): copy1},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy1}},
			check: func(t *testing.T, p Plan) {
				if !p.Pin.Quiet || !hasEvent(p.Events, ReasonPinned) {
					t.Errorf("quiet = %v, events = %+v", p.Pin.Quiet, p.Events)
				}
			},
		},
		"the Namespace's annotation opts the workload in": {
			names: "cfg", changed: true, namespace: versioned, want: Roll,
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
		},
		"the cluster default opts the workload in": {
			names: "cfg", changed: true, opts: func(o *Options) { o.Versioned = true }, want: Roll,
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
		},
		"a malformed annotation is ignored with a Warning, and the Namespace's applies": {
			names: "cfg", changed: true, workload: map[string]string{pin.VersionedAnnotation: "yes"}, namespace: versioned, want: Roll,
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if !hasEventWith(p.Warnings, ReasonInvalidAnnotation, pin.VersionedAnnotation) {
					t.Errorf("warnings = %+v", p.Warnings)
				}
			},
		},
		"the workload's false wins over the Namespace's true": {
			names: "cfg", changed: true, workload: map[string]string{pin.VersionedAnnotation: "false"}, namespace: versioned, want: Roll,
		},
		"a workload not versioned rolls as today": {
			names: "cfg", changed: true, want: Roll,
		},
		"a workload no longer versioned rolls back onto its source": {
			names: copy1, changed: true, want: Roll,
			renames: map[pin.Ref]string{ref(copy1): "cfg"},
		},
		"a kind whose older revisions the collector does not read is not pinned": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			input: func(in *Input) { in.Restart.HistoryUnread = true },
		},
		"a kind whose older revisions the collector does not read, pinned before, rolls back onto its source": {
			names: copy1, changed: true, workload: versioned, want: Roll,
			input:   func(in *Input) { in.Restart.HistoryUnread = true },
			renames: map[pin.Ref]string{ref(copy1): "cfg"},
		},
		"an undo to an older copy is kept while the source is unchanged": {
			names: copyOf(obj(map[string]string{"a": "0"}, nil, "0")), workload: versioned, want: Unchanged,
		},
		"a template already pinned to the current content is left": {
			names: copy1, workload: versioned, want: Unchanged,
		},
		"a template Reroll no longer changes is not pinned": {
			names: "cfg", changed: true, workload: map[string]string{pin.VersionedAnnotation: "true", revert.RevertedAnnotation: `{"manager":"argocd"}`},
			want: Roll,
		},
		"an opt-in waits for the previous rollout, like a rollout": {
			names: "cfg", workload: map[string]string{pin.VersionedAnnotation: "true", WaitForRolloutAnnotation: "true"}, want: Unchanged,
			input: func(in *Input) { in.Progress = &workload.Progress{} },
			check: func(t *testing.T, p Plan) {
				if p.Requeue <= 0 {
					t.Errorf("requeue = %s, want a recheck", p.Requeue)
				}
			},
		},
		"an opt-in pin is a rollout the bound counts: it stamps rolled-at": {
			names: "cfg", workload: versioned, want: Unchanged,
			input:   func(in *Input) { in.Progress = &workload.Progress{Done: true} },
			renames: map[pin.Ref]string{ref("cfg"): copy1},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy1}},
			check: func(t *testing.T, p Plan) {
				if !p.PinsQuietly() || p.Annotations[RolledAtAnnotation] == "" {
					t.Errorf("pins quietly = %v, annotations = %v", p.PinsQuietly(), p.Annotations)
				}
			},
		},
		"without --max-concurrent-rollouts, an opt-in waits while DefaultOptInPins run": {
			names: "cfg", workload: versioned, want: Unchanged,
			input: func(in *Input) {
				in.Progress = &workload.Progress{Done: true}
				in.Rollouts = Rollouts{Running: DefaultOptInPins}
			},
			check: func(t *testing.T, p Plan) {
				if !p.OptInWaits || p.Requeue != OptInFallback || p.Annotations[RolledAtAnnotation] != "" || hasEvent(p.Events, ReasonPinned) {
					t.Errorf("waits = %v, requeue = %s, annotations = %v, events = %+v; want it noted for a wake-up, a recheck in %s and nothing written",
						p.OptInWaits, p.Requeue, p.Annotations, p.Events, OptInFallback)
				}
			},
		},
		"without --max-concurrent-rollouts, one slot short of DefaultOptInPins pins": {
			names: "cfg", workload: versioned, want: Unchanged,
			input: func(in *Input) {
				in.Progress = &workload.Progress{Done: true}
				in.Rollouts = Rollouts{Running: DefaultOptInPins - 1}
			},
			renames: map[pin.Ref]string{ref("cfg"): copy1},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy1}},
		},
		"under --max-concurrent-rollouts, an opt-in waits behind older changes for a slot": {
			names: "cfg", workload: versioned, want: Unchanged,
			opts: func(o *Options) { o.MaxConcurrentRollouts = 20 },
			input: func(in *Input) {
				in.Progress = &workload.Progress{Done: true}
				in.Rollouts = Rollouts{Running: 19, Ahead: 1}
			},
		},
		"a rollout for a change is not held by running opt-in pins when no bound is set": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			input: func(in *Input) {
				in.Progress = &workload.Progress{Done: true}
				in.Rollouts = Rollouts{Running: 5 * DefaultOptInPins}
			},
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if p.PinsQuietly() || p.Annotations[RolledAtAnnotation] != "" {
					t.Errorf("a rollout without a bound is not stamped: %v", p.Annotations)
				}
			},
		},
		"a template outside the object (a workloadRef) is not pinned": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			input: func(in *Input) { in.Restart.TemplateInObject = false },
		},
		"a versioned CronJob's change pins its jobTemplate, in the write that creates its Job": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			input:   cronJobInput(workload.Action{Way: workload.ByJob}),
			renames: map[pin.Ref]string{ref("cfg"): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if p.Roll.Way != workload.ByJob || !hasEventWith(p.Events, ReasonRolled, "pinned ConfigMap cfg to "+copy2) {
					t.Errorf("way = %s, events = %+v", p.Roll.Way, p.Events)
				}
			},
		},
		"a versioned CronJob that creates no Job pins its jobTemplate for its next Jobs": {
			names: copy1, changed: true, workload: versioned, want: NotRolled,
			input:   cronJobInput(workload.Action{Way: workload.NotRestarted, Why: "no Job created"}),
			renames: map[pin.Ref]string{ref(copy1): copy2},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy2}},
			check: func(t *testing.T, p Plan) {
				if p.Pin.Quiet || !hasEventWith(p.Events, ReasonNotRolled, "pinned ConfigMap cfg to "+copy2) {
					t.Errorf("quiet = %v, events = %+v", p.Pin.Quiet, p.Events)
				}
			},
		},
		"a versioned CronJob's opt-in pins its jobTemplate at once: no pod restarts, nothing to wait for": {
			names: "cfg", workload: map[string]string{pin.VersionedAnnotation: "true", WaitForRolloutAnnotation: "true"}, want: Unchanged,
			input: func(in *Input) {
				cronJobInput(workload.Action{Way: workload.NotRestarted})(in)
				in.Progress = &workload.Progress{}
			},
			renames: map[pin.Ref]string{ref("cfg"): copy1},
			copies:  []PinCopy{{Kind: reference.ConfigMap, Source: "cfg", Name: copy1}},
			check: func(t *testing.T, p Plan) {
				if !p.Pin.Quiet || !hasEventWith(p.Events, ReasonPinned, "the next Jobs read the copies") {
					t.Errorf("quiet = %v, events = %+v", p.Pin.Quiet, p.Events)
				}
			},
		},
		"a CronJob not versioned is not pinned": {
			names: "cfg", changed: true, want: NotRolled,
			input: cronJobInput(workload.Action{Way: workload.NotRestarted}),
		},
		"a versioned CronJob's undo to an older copy is kept while the source is unchanged": {
			names: copyOf(obj(map[string]string{"a": "0"}, nil, "0")), workload: versioned, want: Unchanged,
			input: cronJobInput(workload.Action{Way: workload.ByJob}),
		},
		"a Job, re-created whole, is not pinned": {
			names: "cfg", changed: true, workload: versioned, want: Roll,
			input: func(in *Input) {
				in.Kind, in.Action, in.Restart.TemplateInObject = "Job", workload.Action{Way: workload.ByRecreate}, false
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.Key = k
			if c.opts != nil {
				c.opts(&o)
			}
			before := memory{cm("cfg"): v1}
			after := before
			if c.changed {
				after = memory{cm("cfg"): v2}
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
				Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{c.names}),
				NamespaceAnnotations: c.namespace,
				Action:               workload.Action{Way: workload.ByTemplate},
				Restart:              &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}, TemplateInObject: true}}
			if c.names != "cfg" {
				in.Pins = map[pin.Ref]string{ref(c.names): "cfg"}
			}
			first, err := DecideChange(o, in, before)
			if err != nil || first.Outcome != FirstSight {
				t.Fatalf("recording: %v, outcome %s", err, first.Outcome)
			}
			in.Annotations[RecordAnnotation] = first.Record.String()
			in.Annotations[KeyAnnotation] = o.Key.ID()
			for k, v := range c.workload {
				in.Annotations[k] = v
			}
			if c.input != nil {
				c.input(&in)
			}
			var calls []string
			p, err := Decide(o, in, view{memory: after, calls: &calls})
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Errorf("outcome = %s, want %s", p.Outcome, c.want)
			}
			if c.renames == nil {
				if p.Pin != nil {
					t.Fatalf("pinning = %+v, want none", p.Pin)
				}
			} else {
				if p.Pin == nil {
					t.Fatalf("no pinning, want renames %v", c.renames)
				}
				if len(p.Pin.Renames) != len(c.renames) {
					t.Errorf("renames = %v, want %v", p.Pin.Renames, c.renames)
				}
				for from, to := range c.renames {
					if p.Pin.Renames[from] != to {
						t.Errorf("renames = %v, want %v", p.Pin.Renames, c.renames)
					}
				}
				if len(p.Pin.Copies) != len(c.copies) || len(c.copies) > 0 && p.Pin.Copies[0] != c.copies[0] {
					t.Errorf("copies = %+v, want %+v", p.Pin.Copies, c.copies)
				}
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
}

// cronJobInput makes an Input a CronJob's, rolling the way a.
func cronJobInput(a workload.Action) func(*Input) {
	return func(in *Input) {
		in.Kind, in.Action = "CronJob", a
		in.Restart.TemplateInObject, in.Restart.JobTemplate = false, true
	}
}

// TestDecide_UndoToACopyIsNoRevert checks that a template put back to one
// that names copies (kubectl rollout undo) is the user's choice, not a
// revert that stops Reroll's template changes; the positive control is the
// same template naming the source.
func TestDecide_UndoToACopyIsNoRevert(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
			Annotations: map[string]string{"reroll.dev/auto": "true"},
			Template:    template([]string{"cfg-0123456789"}),
			Action:      workload.Action{Way: workload.ByTemplate},
			Restart:     &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}, TemplateInObject: true}}
		if pinned {
			in.Pins = map[pin.Ref]string{{Kind: reference.ConfigMap, Name: "cfg-0123456789"}: "cfg"}
		}
		src := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1"), cm("cfg-0123456789"): obj(map[string]string{"a": "0"}, nil, "1")}
		first, err := DecideChange(defaults(), in, src)
		if err != nil {
			t.Fatal(err)
		}
		in.Annotations[RecordAnnotation] = first.Record.String()
		in.Annotations[KeyAnnotation] = digest.Key{}.ID()
		in.Annotations[revert.PatchAnnotation] = revert.Patch{Before: revert.Fingerprint(in.Template), After: "after", At: now.Add(-time.Minute)}.String()
		var calls []string
		p, err := Decide(defaults(), in, view{memory: src, calls: &calls, latest: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Reverted == pinned {
			t.Errorf("pinned %v: reverted = %v", pinned, p.Reverted)
		}
		if v, ok := p.Annotations[revert.PatchAnnotation]; !ok || v != "" {
			t.Errorf("pinned %v: the template patch record is dropped either way, got %q, %v", pinned, v, ok)
		}
	}
}

// hasEventWith reports whether events hold one with reason whose note
// contains part.
func hasEventWith(events []Event, reason, part string) bool {
	for _, e := range events {
		if e.Reason == reason && strings.Contains(e.Note, part) {
			return true
		}
	}
	return false
}

// TestDecide_PinningAfterAFailedCopyWaitsForTheNextRollout: a template
// that names its source directly and carries pin.TemplateAnnotation rolled
// unpinned (a copy could not be made): no opt-in pin retries it; the
// positive control without the annotation pins.
func TestDecide_PinningAfterAFailedCopyWaitsForTheNextRollout(t *testing.T) {
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, annotated := range []bool{false, true} {
		o := defaults()
		o.Key = k
		in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
			Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}),
			Action:  workload.Action{Way: workload.ByTemplate},
			Restart: &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}, TemplateInObject: true}}
		if annotated {
			in.Template.Annotations = map[string]string{pin.TemplateAnnotation: "Secret/db=db-0123456789"}
		}
		src := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
		first, err := DecideChange(o, in, src)
		if err != nil {
			t.Fatal(err)
		}
		in.Annotations[RecordAnnotation] = first.Record.String()
		in.Annotations[KeyAnnotation] = k.ID()
		in.Annotations[pin.VersionedAnnotation] = "true"
		var calls []string
		p, err := Decide(o, in, view{memory: src, calls: &calls})
		if err != nil {
			t.Fatal(err)
		}
		if (p.Pin != nil) == annotated {
			t.Errorf("annotated %v: pinning %+v", annotated, p.Pin)
		}
	}
}

// TestPinsOf: a ConfigMap the template names is a pin when it is a copy
// whose signature verifies under the key, never when either copy
// annotation is missing or the signature is another's; a name the cache
// does not hold is a pin only as the template claims it.
func TestPinsOf(t *testing.T) {
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	data := obj(map[string]string{"a": "1"}, nil, "1").Data
	name := pin.Name(k, reference.ConfigMap, "ns", "cfg", data.Keys)
	signed := map[string]string{pin.AnnotationCopyOf: "cfg", pin.AnnotationSignature: pin.Signature(k, reference.ConfigMap, "ns", name, "cfg", data.Keys)}
	without := func(drop string) map[string]string {
		out := maps.Clone(signed)
		delete(out, drop)
		return out
	}
	cases := map[string]struct {
		annotations map[string]string // the copy's, held by the cache
		held        bool              // the cache holds the copy
		claim       bool              // the template claims the copy
		want        map[pin.Ref]string
	}{
		"a signed copy is a pin":                           {annotations: signed, held: true, want: map[pin.Ref]string{{Kind: reference.ConfigMap, Name: name}: "cfg"}},
		"a copy without a signature is none":               {annotations: without(pin.AnnotationSignature), held: true},
		"a copy without its source is none":                {annotations: without(pin.AnnotationCopyOf), held: true},
		"an object without annotations is none":            {held: true},
		"a forged signature is none":                       {annotations: map[string]string{pin.AnnotationCopyOf: "cfg", pin.AnnotationSignature: strings.Repeat("0", len(signed[pin.AnnotationSignature]))}, held: true},
		"a claimed copy the cache holds must verify":       {annotations: without(pin.AnnotationSignature), held: true, claim: true},
		"a claimed copy the cache has not seen is a pin":   {claim: true, want: map[pin.Ref]string{{Kind: reference.ConfigMap, Name: name}: "cfg"}},
		"an unclaimed name the cache has not seen is none": {},
	}
	for desc, tc := range cases {
		t.Run(desc, func(t *testing.T) {
			src := memory{}
			if tc.held {
				o := obj(nil, tc.annotations, "1")
				o.Data = data
				src[cm(name)] = o
			}
			tmpl := template([]string{name})
			if tc.claim {
				tmpl.Annotations = map[string]string{pin.TemplateAnnotation: pin.FormatPins(map[pin.Ref]string{{Kind: reference.ConfigMap, Name: "cfg"}: name})}
			}
			got, err := PinsOf(src, k, "ns", tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("PinsOf = %v, want %v", got, tc.want)
			}
		})
	}
}
