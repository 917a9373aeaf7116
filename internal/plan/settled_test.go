package plan

import (
	"testing"
	"time"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/workload"
)

// TestDecide_Settled checks which plans say that the workload, once they
// are written, has nothing left to decide (Plan.Settled), and that deciding
// again on the workload as a settled plan writes it finds exactly that:
// Unchanged, with nothing to write beyond what it has, tell or requeue.
func TestDecide_Settled(t *testing.T) {
	cases := map[string]struct {
		opts   func(*Options)    // changes to the default options
		extra  map[string]string // more workload annotations, before the change
		input  func(*Input)      // changes to the Input
		want   Outcome           // the plan's outcome
		settle bool              // Plan.Settled
	}{
		"a rollout by the pod template settles": {
			want: Roll, settle: true},
		"a rollout with a pause period requeues at its end": {
			extra: map[string]string{"reroll.dev/pause-period": "5m"},
			want:  Roll},
		"a rollout by eviction evicts pod by pod": {
			input: func(in *Input) {
				in.Action.Way = workload.ByEviction
				in.Restart.Mode = eviction.Mode{Evict: true, MaxUnavailable: 1}
			},
			want: Roll},
		"a rollout that counts against the concurrent rollout bound": {
			opts:  func(o *Options) { o.MaxConcurrentRollouts = 5 },
			input: func(in *Input) { in.Progress = &workload.Progress{} },
			want:  Roll},
		"a rollout of a workload with versioned config": {
			extra: map[string]string{pin.VersionedAnnotation: "true"},
			want:  Roll},
		"a rollout of a member of a change set": {
			extra: map[string]string{delivery.MemberAnnotation: "anything"},
			want:  Roll},
		"a rollout that clears a pending mark": {
			extra: map[string]string{PendingAnnotation: "anything"},
			want:  Roll},
		"a rollout with a malformed annotation warns": {
			extra: map[string]string{"reroll.dev/pause-period": "soon"},
			want:  Roll},
		"a change held by the coalescing window": {
			input: func(in *Input) { in.Coalesce.Held = true },
			want:  Roll},
		"nothing changed": {
			want: Unchanged},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			if c.opts != nil {
				c.opts(&o)
			}
			before := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
			after := memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")}
			if c.want == Unchanged {
				after = before
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now, Pausable: true,
				Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}),
				Action: workload.Action{Way: workload.ByTemplate}, Restart: &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}, TemplateInObject: true}}
			recordFirstSight(t, o, &in, before, c.extra, c.input)
			v := view{memory: after, calls: new([]string)}
			p, err := Decide(o, in, v)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want || p.Settled != c.settle {
				t.Fatalf("outcome %s, settled %v; want %s, %v", p.Outcome, p.Settled, c.want, c.settle)
			}
			if !p.Settled {
				return
			}
			// The workload as the plan writes it: its annotations, and the
			// trigger in its pod template.
			written := in
			written.Annotations = map[string]string{}
			for k, v := range in.Annotations {
				written.Annotations[k] = v
			}
			for k, v := range p.Annotations {
				if v == "" {
					delete(written.Annotations, k)
				} else {
					written.Annotations[k] = v
				}
			}
			written.Template = in.Template.DeepCopy()
			if err := p.Roll.Trigger.Set(written.Template); err != nil {
				t.Fatal(err)
			}
			written.Now = now.Add(time.Second)
			again, err := Decide(o, written, v)
			if err != nil {
				t.Fatal(err)
			}
			if again.Outcome != Unchanged || again.Requeue != 0 || len(again.Events) != 0 || len(again.Warnings) != 0 || again.Eviction != nil || again.Pin != nil || again.Settled {
				t.Errorf("deciding again: outcome %s, requeue %s, events %v, warnings %v, eviction %v, pin %v, settled %v",
					again.Outcome, again.Requeue, again.Events, again.Warnings, again.Eviction, again.Pin, again.Settled)
			}
			for k, v := range again.Annotations {
				if got, ok := written.Annotations[k]; v == "" && ok || v != "" && got != v {
					t.Errorf("deciding again writes annotation %s = %q over %q", k, v, got)
				}
			}
		})
	}
}
