package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/reroll/reroll/internal/workload"
)

func TestDecide_Gates(t *testing.T) {
	done := &workload.Progress{Done: true}
	progressing := &workload.Progress{}
	before := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
	after := memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")}
	// now is Sunday 2026-11-22 12:00 UTC.
	cases := map[string]struct {
		opts      func(*Options)     // changes to the default options
		extra     map[string]string  // workload annotations besides opt-in and record
		namespace map[string]string  // the Namespace's annotations
		hold      bool               // the kind has no pause of its own (not Pausable)
		progress  *workload.Progress // the workload's status; nil: its kind reports none
		rollouts  Rollouts           // the bound's counts
		want      Outcome            // the outcome
		reason    DeferReason        // the deferral's reason, for DeferredRollout
		until     time.Time          // the deferral's Until
		pending   string             // PendingAnnotation written ("-" removed, "" untouched)
		rolledAt  string             // RolledAtAnnotation written ("-" removed, "" untouched)
		event     string             // a substring of the single Event's note, if any
		quiet     bool               // a pending is written again without an Event
	}{
		"no gate rolls": {
			progress: done, want: Roll,
		},
		"outside the workload's window": {
			extra:    map[string]string{RolloutWindowAnnotation: "0 2 * * MON-FRI 2h"},
			progress: done, want: DeferredRollout, reason: DeferWindow,
			until:   time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
			pending: "2026-11-22T12:00:00Z rollout-window 2026-11-22T12:10:00Z", event: "until 2026-11-23T02:00:00Z",
		},
		"outside the namespace's window": {
			namespace: map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h"},
			want:      DeferredRollout, reason: DeferWindow, until: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
			pending: "2026-11-22T12:00:00Z rollout-window 2026-11-22T12:10:00Z",
		},
		"the workload's window wins over the namespace's": {
			extra:     map[string]string{RolloutWindowAnnotation: "0 11 * * * 2h"},
			namespace: map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h"},
			want:      Roll,
		},
		"inside the window, the pending change rolls and the pending mark goes": {
			extra:   map[string]string{RolloutWindowAnnotation: "0 11 * * * 2h", PendingAnnotation: "2026-11-21T20:00:00Z rollout-window 2026-11-22T12:10:00Z"},
			want:    Roll,
			pending: "-",
		},
		"a malformed window is ignored with a warning": {
			extra: map[string]string{RolloutWindowAnnotation: "whenever"},
			want:  Roll,
		},
		// The security review: deferred forever, polled every 5 s.
		"a malformed window that never opens is ignored with a warning": {
			extra: map[string]string{RolloutWindowAnnotation: "0 0 30 2 * 1h"},
			want:  Roll,
		},
		"a malformed namespace window of 250 KB is ignored with a warning": {
			namespace: map[string]string{RolloutWindowAnnotation: strings.Repeat("0 0 30 2 * 1h;", 18000)},
			want:      Roll,
		},
		"the override on the Namespace rolls outside the window": {
			extra:     map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h"},
			namespace: map[string]string{RolloutOverrideAnnotation: "true"},
			want:      Roll,
		},
		"the override on the workload rolls with --rollout-override=workload": {
			opts:  func(o *Options) { o.Override = OverrideWorkload },
			extra: map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h", RolloutOverrideAnnotation: "true"},
			want:  Roll,
		},
		// The third review (H3): a tenant's override took a slot past the bound.
		"the override on the workload is ignored by default, and the Event says so": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 1 },
			extra:    map[string]string{RolloutOverrideAnnotation: "true"},
			progress: done, rollouts: Rollouts{Running: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
			event: "on the workload is ignored: --rollout-override=namespace",
		},
		"no override anywhere with --rollout-override=off": {
			opts:      func(o *Options) { o.Override = OverrideOff },
			extra:     map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h"},
			namespace: map[string]string{RolloutOverrideAnnotation: "true"},
			want:      DeferredRollout, reason: DeferWindow, until: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
			pending: "2026-11-22T12:00:00Z rollout-window 2026-11-22T12:10:00Z",
		},
		"a deferral already recorded writes and tells nothing again": {
			extra: map[string]string{RolloutWindowAnnotation: "0 2 * * * 1h", PendingAnnotation: "2026-11-22T11:00:00Z rollout-window 2026-11-22T12:10:00Z"},
			want:  DeferredRollout, reason: DeferWindow, until: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
		},
		"wait-for-rollout waits while the previous rollout runs": {
			extra:    map[string]string{WaitForRolloutAnnotation: "true"},
			progress: progressing, want: DeferredRollout, reason: DeferPreviousRollout,
			pending: "2026-11-22T12:00:00Z previous-rollout 2026-11-22T12:10:00Z", event: "still in progress",
		},
		"wait-for-rollout from the flag": {
			opts:     func(o *Options) { o.WaitForRollout = true },
			progress: progressing, want: DeferredRollout, reason: DeferPreviousRollout,
			pending: "2026-11-22T12:00:00Z previous-rollout 2026-11-22T12:10:00Z",
		},
		"the annotation turns the flag's wait off": {
			opts:     func(o *Options) { o.WaitForRollout = true },
			extra:    map[string]string{WaitForRolloutAnnotation: "false"},
			progress: progressing, want: Roll,
		},
		"a failed previous rollout is not waited for": {
			extra:    map[string]string{WaitForRolloutAnnotation: "true"},
			progress: &workload.Progress{Failed: true}, want: Roll,
		},
		"once the previous rollout completed, the waiting change rolls": {
			extra:    map[string]string{WaitForRolloutAnnotation: "true", PendingAnnotation: "2026-11-22T11:59:00Z previous-rollout 2026-11-22T12:10:00Z"},
			progress: done, want: Roll, pending: "-",
		},
		"the cluster bound is reached": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 2 },
			progress: done, rollouts: Rollouts{Running: 2},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
			event: "2 rollouts run and 0 older changes wait, at most 2",
		},
		"older waiting changes take the free slots first": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 2 },
			progress: done, rollouts: Rollouts{Running: 1, Ahead: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
		},
		"a free slot rolls, stamped as running": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 2 },
			extra:    map[string]string{PendingAnnotation: "2026-11-22T11:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z"},
			progress: done, rollouts: Rollouts{Running: 1},
			want: Roll, pending: "-", rolledAt: "2026-11-22T12:00:00Z",
		},
		// The third review (H3): one namespace took every slot.
		"one namespace holds at most half the cluster's slots": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 4 },
			progress: done, rollouts: Rollouts{Running: 2, RunningInNamespace: 2},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
			event: "at most 2 run at once in one namespace",
		},
		"another namespace rolls while the first holds its share": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 4 },
			progress: done, rollouts: Rollouts{Running: 2},
			want: Roll, rolledAt: "2026-11-22T12:00:00Z",
		},
		"--max-concurrent-rollouts-per-namespace raises the share": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts, o.MaxConcurrentRolloutsPerNamespace = 4, 4 },
			progress: done, rollouts: Rollouts{Running: 3, RunningInNamespace: 3},
			want: Roll, rolledAt: "2026-11-22T12:00:00Z",
		},
		"a Namespace's bound lowers its share, never raises it": {
			opts:      func(o *Options) { o.MaxConcurrentRollouts = 4 },
			namespace: map[string]string{MaxConcurrentRolloutsAnnotation: "10"},
			progress:  done, rollouts: Rollouts{Running: 2, RunningInNamespace: 2},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
		},
		// The third review (H3): a signed pending copied and written back
		// later was first in the queue for good.
		"a replayed pending past its expiry counts for nothing: the wait starts now": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 1 },
			extra:    map[string]string{PendingAnnotation: "2026-11-01T00:00:00Z max-concurrent-rollouts 2026-11-01T00:10:00Z"},
			progress: done, rollouts: Rollouts{Running: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
		},
		"a pending of an older Reroll, without expiry, counts for nothing": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 1 },
			extra:    map[string]string{PendingAnnotation: "2026-11-01T00:00:00Z max-concurrent-rollouts"},
			progress: done, rollouts: Rollouts{Running: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
		},
		"a waiting change is signed again once half its validity passed, quietly": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 1 },
			extra:    map[string]string{PendingAnnotation: "2026-11-22T11:00:00Z max-concurrent-rollouts 2026-11-22T12:04:00Z"},
			progress: done, rollouts: Rollouts{Running: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T11:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
			quiet: true,
		},
		"the validity follows --rollout-timeout": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts, o.RolloutTimeout = 1, 20*time.Minute },
			progress: done, rollouts: Rollouts{Running: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:20:00Z",
		},
		"the namespace bound": {
			namespace: map[string]string{MaxConcurrentRolloutsAnnotation: "1"},
			progress:  done, rollouts: Rollouts{Running: 5, RunningInNamespace: 1},
			want: DeferredRollout, reason: DeferMaxConcurrent, pending: "2026-11-22T12:00:00Z max-concurrent-rollouts 2026-11-22T12:10:00Z",
		},
		"a malformed namespace bound is ignored": {
			namespace: map[string]string{MaxConcurrentRolloutsAnnotation: "many"},
			progress:  done, rollouts: Rollouts{RunningInNamespace: 9},
			want: Roll,
		},
		"kinds without progress are not bounded": {
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 1 },
			rollouts: Rollouts{Running: 3}, want: Roll,
		},
		"a completed rollout no longer counts": {
			extra:    map[string]string{RolledAtAnnotation: "2026-11-22T11:58:00Z"},
			opts:     func(o *Options) { o.MaxConcurrentRollouts = 2 },
			progress: done, want: Roll, rolledAt: "2026-11-22T12:00:00Z",
		},
		"a rollout past its deadline frees its slot with a warning": {
			extra:    map[string]string{RolledAtAnnotation: "2026-11-22T11:00:00Z", WaitForRolloutAnnotation: "true"},
			progress: &workload.Progress{Deadline: 10 * time.Minute},
			want:     DeferredRollout, reason: DeferPreviousRollout,
			pending: "2026-11-22T12:00:00Z previous-rollout 2026-11-22T12:10:00Z", rolledAt: "-",
		},
		// The third review (H3): progressDeadlineSeconds is the tenant's.
		"a rollout past --rollout-timeout frees its slot although its own deadline is 68 years": {
			opts:     func(o *Options) { o.RolloutTimeout = 20 * time.Second },
			extra:    map[string]string{RolledAtAnnotation: "2026-11-22T11:59:30Z", WaitForRolloutAnnotation: "true"},
			progress: &workload.Progress{Deadline: 2147483647 * time.Second},
			want:     DeferredRollout, reason: DeferPreviousRollout,
			pending: "2026-11-22T12:00:00Z previous-rollout 2026-11-22T12:00:20Z", rolledAt: "-",
		},
		"the hold of kinds without a pause starts with the first change": {
			extra: map[string]string{"reroll.dev/pause-period": "10m"},
			hold:  true, want: DeferredRollout, reason: DeferPausePeriod,
			until: now.Add(10 * time.Minute), pending: "2026-11-22T12:00:00Z pause-period 2026-11-22T12:10:00Z",
		},
		"the hold ends after the period and rolls everything at once": {
			extra: map[string]string{"reroll.dev/pause-period": "10m", PendingAnnotation: "2026-11-22T11:50:00Z pause-period 2026-11-22T12:10:00Z"},
			hold:  true, want: Roll, pending: "-",
		},
		"the default pause period holds too": {
			opts: func(o *Options) { o.PausePeriod = time.Minute },
			hold: true, want: DeferredRollout, reason: DeferPausePeriod, until: now.Add(time.Minute),
			pending: "2026-11-22T12:00:00Z pause-period 2026-11-22T12:10:00Z",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			if c.opts != nil {
				c.opts(&o)
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u",
				Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}),
				Action: workload.Action{Way: workload.ByTemplate}, Pausable: !c.hold, Now: now,
				NamespaceAnnotations: c.namespace, Progress: c.progress, Rollouts: c.rollouts}
			first, err := DecideChange(o, in, before)
			if err != nil {
				t.Fatal(err)
			}
			in.Annotations[RecordAnnotation] = first.Record.String()
			for k, v := range c.extra {
				if k == PendingAnnotation || k == RolledAtAnnotation {
					// As Reroll writes them.
					v = Sign(o.Key, in.UID, k, v)
				}
				in.Annotations[k] = v
			}
			p, err := DecideChange(o, in, after)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Fatalf("outcome = %s, want %s (warnings %+v)", p.Outcome, c.want, p.Warnings)
			}
			if c.want == DeferredRollout {
				if p.Deferral == nil || p.Deferral.Reason != c.reason || !p.Deferral.Until.Equal(c.until) {
					t.Errorf("deferral = %+v, want %s until %s", p.Deferral, c.reason, c.until)
				}
				if _, ok := p.Annotations[RecordAnnotation]; ok {
					t.Errorf("a deferred rollout must not write the record")
				}
				if p.Recheck <= 0 || p.Alert != nil {
					t.Errorf("recheck = %s, alert %v: want a recheck and no alert", p.Recheck, p.Alert)
				}
			}
			for key, want := range map[string]string{PendingAnnotation: c.pending, RolledAtAnnotation: c.rolledAt} {
				got, ok := p.Annotations[key]
				switch {
				case want == "" && ok:
					t.Errorf("%s written as %q, want untouched", key, got)
				case want == "-" && (!ok || got != ""):
					t.Errorf("%s = %q (written %v), want removed", key, got, ok)
				case want != "" && want != "-":
					if v, signed := Verified(o.Key, in.UID, key, p.Annotations); !signed || v != want {
						t.Errorf("%s = %q, want %q signed", key, got, want)
					}
				}
			}
			var notes []string
			for _, e := range p.Events {
				if e.Reason == ReasonDeferred {
					notes = append(notes, e.Note)
				}
			}
			if c.pending != "" && c.pending != "-" && c.want == DeferredRollout && !c.quiet && len(notes) != 1 {
				t.Errorf("deferred events = %q, want one", notes)
			}
			if (c.pending == "" || c.quiet) && len(notes) != 0 {
				t.Errorf("deferred events = %q, want none when nothing changed", notes)
			}
			if c.event != "" && (len(notes) != 1 || !strings.Contains(notes[0], c.event)) {
				t.Errorf("deferred events = %q, want one with %q", notes, c.event)
			}
			timedOut := 0
			for _, e := range p.Warnings {
				if e.Reason == ReasonRolloutTimedOut {
					timedOut++
				}
			}
			if wantTimedOut := strings.Contains(name, "deadline"); (timedOut == 1) != wantTimedOut {
				t.Errorf("%d RolloutTimedOut warnings, want them: %v", timedOut, wantTimedOut)
			}
			if strings.Contains(name, "malformed") && len(p.Warnings) != 1 {
				t.Errorf("warnings = %+v, want one", p.Warnings)
			}
			if strings.Contains(name, "malformed window") && !strings.Contains(p.Warnings[0].Note, RolloutWindowAnnotation) {
				t.Errorf("warning %q does not name %s", p.Warnings[0].Note, RolloutWindowAnnotation)
			}
		})
	}
}
