package plan

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/workload"
)

// Forged state: a tenant writes reroll.dev/rolled-at (a future time) or
// reroll.dev/pending (an old time) by hand, or an older Reroll left them
// unsigned. Neither holds a rollout nor counts; each is removed with a
// Warning Event. Signed values (positive control) are honoured.
func TestDecide_IgnoresForgedState(t *testing.T) {
	key, err := digest.NewKey(bytes.Repeat([]byte{7}, digest.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	progressing := &workload.Progress{}
	cases := map[string]struct {
		// state are the state annotations on the workload, as written.
		state map[string]string
		// progress is the workload's status.
		progress *workload.Progress
		// hold is true for a kind without a pause of its own.
		hold bool
		// want is the outcome; removed the annotations the plan removes;
		// warnings how many ForgedState Warnings it emits.
		want     Outcome
		removed  []string
		warnings int
	}{
		"a forged future rolled-at is removed": {
			state:    map[string]string{RolledAtAnnotation: "2099-01-01T00:00:00Z"},
			progress: progressing, want: Unchanged, removed: []string{RolledAtAnnotation}, warnings: 1,
		},
		"a rolled-at signed for another workload is removed": {
			state:    map[string]string{RolledAtAnnotation: Sign(key, "other-uid", RolledAtAnnotation, "2026-11-22T11:59:00Z")},
			progress: progressing, want: Unchanged, removed: []string{RolledAtAnnotation}, warnings: 1,
		},
		"positive control: a signed running rollout stays": {
			state:    map[string]string{RolledAtAnnotation: Sign(key, "u", RolledAtAnnotation, "2026-11-22T11:59:00Z")},
			progress: progressing, want: Unchanged,
		},
		"a forged old pending is removed": {
			state:    map[string]string{PendingAnnotation: "2000-01-01T00:00:00Z max-concurrent-rollouts"},
			progress: progressing, want: Unchanged, removed: []string{PendingAnnotation}, warnings: 1,
		},
		"an unsigned pause-period pending from an older Reroll starts the period again": {
			state: map[string]string{PendingAnnotation: "2026-11-22T11:00:00Z pause-period", "reroll.dev/pause-period": "10m"},
			hold:  true, want: DeferredRollout, warnings: 1,
		},
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.Key = key
			base := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
			changed := memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u",
				Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}),
				Action: workload.Action{Way: workload.ByTemplate}, Pausable: !c.hold, Now: now, Progress: c.progress}
			first, err := DecideChange(o, in, base)
			if err != nil {
				t.Fatal(err)
			}
			in.Annotations[RecordAnnotation] = first.Record.String()
			in.Annotations[KeyAnnotation] = key.ID()
			for k, v := range c.state {
				in.Annotations[k] = v
			}
			src := base
			if c.want == DeferredRollout {
				src = changed
			}
			p, err := DecideChange(o, in, src)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Fatalf("outcome = %s, want %s", p.Outcome, c.want)
			}
			for _, k := range c.removed {
				if v, ok := p.Annotations[k]; !ok || v != "" {
					t.Errorf("%s = %q (written %v), want removed", k, v, ok)
				}
			}
			n := 0
			for _, w := range p.Warnings {
				if w.Reason == ReasonForgedState {
					n++
				}
			}
			if n != c.warnings {
				t.Errorf("%d ForgedState warnings, want %d: %+v", n, c.warnings, p.Warnings)
			}
			if c.want == DeferredRollout {
				v, ok := Verified(key, "u", PendingAnnotation, p.Annotations)
				if !ok || !strings.HasPrefix(v, "2026-11-22T12:00:00Z pause-period") {
					t.Errorf("pending = %q (signed %v), want a new signed period from now", p.Annotations[PendingAnnotation], ok)
				}
			}
			if _, ok := Verified(key, "u", RolledAtAnnotation, in.Annotations); ok && len(c.removed) == 0 {
				if _, written := p.Annotations[RolledAtAnnotation]; written {
					t.Errorf("a signed running rollout's stamp was touched")
				}
			}
		})
	}
}
