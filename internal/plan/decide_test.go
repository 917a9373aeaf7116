package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// view is a View held in memory; calls lists the reads Decide made beyond
// the Source, in order.
type view struct {
	memory
	heldSince time.Time                          // HeldSince's answer
	notified  NotifyState                        // Notification's answer
	notifyErr error                              // with NotifyFailed
	pods      []eviction.Pod                     // Pods' answer
	current   error                              // Current's answer
	latest    map[string]string                  // the annotations Latest reads
	managers  []metav1.ManagedFieldsEntry        // the field managers Latest reads
	order     delivery.Order                     // Order's answer
	halts     map[string]*delivery.Halt          // Halts' answer
	members   map[string][]delivery.Member       // Members' answer, by set
	validity  Validity                           // Validity's answer
	revisions map[string]*corev1.PodTemplateSpec // Revision's answers, by fingerprint
	calls     *[]string                          // the reads made
}

func (v view) called(name string) { *v.calls = append(*v.calls, name) }

func (v view) Older(digest.Key) Source { v.called("Older"); return v.memory }
func (v view) HeldSince(changed time.Time) time.Time {
	v.called("HeldSince")
	if v.heldSince.IsZero() {
		return changed
	}
	return v.heldSince
}
func (v view) Notification(string) (NotifyState, error) {
	v.called("Notification")
	return v.notified, v.notifyErr
}
func (v view) Pods() ([]eviction.Pod, error) { v.called("Pods"); return v.pods, nil }
func (v view) Current() error                { v.called("Current"); return v.current }
func (v view) Latest() (map[string]string, []metav1.ManagedFieldsEntry, error) {
	v.called("Latest")
	return v.latest, v.managers, nil
}
func (v view) Order() (delivery.Order, error) { v.called("Order"); return v.order, nil }
func (v view) Halts() (map[string]*delivery.Halt, error) {
	v.called("Halts")
	return v.halts, nil
}
func (v view) Member(rec delivery.Record) (delivery.Member, error) {
	v.called("Member")
	return delivery.Member{Workload: "Deployment/ns/web", Record: rec}, nil
}
func (v view) Members(id string) ([]delivery.Member, error) {
	v.called("Members")
	return v.members[id], nil
}
func (v view) Validity([]Diff) (Validity, error) {
	v.called("Validity")
	return v.validity, nil
}
func (v view) Revision(fingerprint string) (*corev1.PodTemplateSpec, error) {
	v.called("Revision")
	return v.revisions[fingerprint], nil
}
func (v view) WaveHash(string, []reference.Reference) (string, error) {
	v.called("WaveHash")
	return "wave-hash-of-values", nil
}

// TestDecide_WholePlan checks what Decide adds to DecideChange's plan: safe
// delivery's holds and halts, the storm breaker, the holds of the
// coalescing window, the notification step, the restart by eviction and
// the revert check, each with the reads it costs.
func TestDecide_WholePlan(t *testing.T) {
	cfgSet := delivery.SetID(digest.Key{}, "ns", "ConfigMap", "cfg", obj(map[string]string{"a": "2"}, nil, "2").Data.ReloaderSHA1, false)
	fingerprint := revert.Fingerprint(template([]string{"cfg"}))
	reverted := revert.Patch{Before: fingerprint, After: "after", At: now.Add(-time.Minute)}.String()
	stale := revert.Patch{Before: fingerprint, After: "after", At: now.Add(-revert.Window - time.Minute)}.String()
	pod := func(name string) eviction.Pod {
		return eviction.Pod{Name: name, UID: types.UID("uid-" + name), Created: now.Add(-time.Hour), Ready: true, Owned: true}
	}
	cases := map[string]struct {
		opts    func(*Options)         // changes to the default options
		changed bool                   // cfg changed since the record
		extra   map[string]string      // more workload annotations
		way     workload.Way           // how the kind rolls; ByTemplate when ""
		input   func(*Input)           // changes to the Input
		view    func(*view)            // changes to the View
		want    Outcome                // the plan's outcome
		wantErr string                 // part of Decide's error; "" for none
		reads   []string               // the View's reads beyond the Source, in order
		check   func(*testing.T, Plan) // further checks; may be nil
	}{
		"a change rolls and costs no read beyond the source": {
			changed: true,
			want:    Roll,
			check: func(t *testing.T, p Plan) {
				if v, ok := p.Annotations[eviction.ProgressAnnotation]; !ok || v != "" {
					t.Errorf("no restart by eviction under way: its record is removed, got %q, %v", v, ok)
				}
				if p.Hold != "" || p.Eviction != nil || p.Requeue != 0 {
					t.Errorf("hold %q, eviction %v, requeue %s", p.Hold, p.Eviction, p.Requeue)
				}
			},
		},
		"valid new content rolls, after one read of the Validators' verdict": {
			changed: true,
			input:   func(in *Input) { in.Validate = true },
			want:    Roll,
			reads:   []string{"Validity"},
		},
		"new content that fails a rule holds the rollout before any wave, with a Warning": {
			changed: true,
			input:   func(in *Input) { in.Validate = true; in.Delivery = &DeliveryInput{} },
			view:    func(v *view) { v.validity = Validity{Failed: []string{"ConfigMap/cfg: key a is not JSON"}} },
			want:    DeferredRollout,
			reads:   []string{"Validity"},
			check: func(t *testing.T, p Plan) {
				if p.Deferral == nil || p.Deferral.Reason != DeferReason(HoldInvalid) || !strings.Contains(p.Deferral.Detail, "key a is not JSON") {
					t.Errorf("deferral = %+v", p.Deferral)
				}
				if !hasEvent(p.Events, ReasonInvalidContent) {
					t.Errorf("events = %+v", p.Events)
				}
				if p.Annotations[RecordAnnotation] != "" {
					t.Errorf("a held rollout leaves the record as it is")
				}
				// One alert for the held change, naming the object, the rule and the key.
				if p.Alert == nil || p.Alert.Invalid == nil || len(p.Alert.Objects) == 0 ||
					!slices.Equal(p.Alert.Invalid.Findings, []string{"ConfigMap/cfg: key a is not JSON"}) {
					t.Errorf("alert = %+v", p.Alert)
				}
			},
		},
		"a copy a Validator checks that lacks the content holds the rollout for the change set's window": {
			changed: true,
			input: func(in *Input) {
				in.Validate = true
				in.Delivery = &DeliveryInput{Options: delivery.Options{Window: time.Minute}}
			},
			view:  func(v *view) { v.validity = Validity{Awaited: []string{"ConfigMap/cfg in namespace other"}} },
			want:  DeferredRollout,
			reads: []string{"Validity"},
			check: func(t *testing.T, p Plan) {
				if p.Deferral == nil || p.Deferral.Reason != DeferReason(delivery.HoldWave) || !p.Deferral.Until.Equal(now.Add(time.Minute)) {
					t.Errorf("deferral = %+v", p.Deferral)
				}
				if hasEvent(p.Events, ReasonInvalidContent) {
					t.Errorf("a copy on its way is no invalid content: %+v", p.Events)
				}
				if p.Alert != nil {
					t.Errorf("a copy on its way alerts nothing: %+v", p.Alert)
				}
			},
		},
		"validation off reads no verdict": {
			changed: true,
			view:    func(v *view) { v.validity = Validity{Failed: []string{"ConfigMap/cfg: bad"}} },
			want:    Roll,
		},
		"a burst inside the coalescing window holds the rollout, and nothing restarts": {
			changed: true,
			input:   func(in *Input) { in.Coalesce.Held = true },
			want:    Roll,
			check: func(t *testing.T, p Plan) {
				if p.Hold != HoldCoalescing || p.Requeue != 0 {
					t.Errorf("hold = %q, requeue %s", p.Hold, p.Requeue)
				}
				if _, ok := p.Annotations[eviction.ProgressAnnotation]; ok {
					t.Errorf("a held plan decides no restart")
				}
			},
		},
		"a change made within the window, that the debounce may not have heard of, holds for the rest of the window": {
			changed: true,
			input:   func(in *Input) { in.Coalesce.Window, in.Coalesce.MaxWait = 500*time.Millisecond, 10*time.Second },
			view:    changedAt(now.Truncate(time.Second)),
			want:    Roll,
			check: func(t *testing.T, p Plan) {
				if p.Hold != HoldCoalescing || p.Requeue <= 0 || p.Requeue > 1500*time.Millisecond {
					t.Errorf("hold = %q, requeue %s", p.Hold, p.Requeue)
				}
			},
		},
		"the reconcile the debounce started rolls a change made within the window": {
			changed: true,
			input: func(in *Input) {
				in.Coalesce.Window, in.Coalesce.MaxWait, in.Coalesce.BurstEnded = 500*time.Millisecond, 10*time.Second, true
			},
			view: changedAt(now.Truncate(time.Second)),
			want: Roll,
			check: func(t *testing.T, p Plan) {
				if p.Hold != "" || p.Requeue != 0 {
					t.Errorf("hold = %q, requeue %s", p.Hold, p.Requeue)
				}
			},
		},
		"a change made before the window (Reroll was down) rolls at once": {
			changed: true,
			input:   func(in *Input) { in.Coalesce.Window, in.Coalesce.MaxWait = 500*time.Millisecond, 10*time.Second },
			view:    changedAt(now.Add(-5 * time.Second)),
			want:    Roll,
			check: func(t *testing.T, p Plan) {
				if p.Hold != "" || p.Requeue != 0 {
					t.Errorf("hold = %q, requeue %s", p.Hold, p.Requeue)
				}
			},
		},
		"a burst holds nothing when nothing changed": {
			input: func(in *Input) { in.Coalesce.Held = true },
			want:  Unchanged,
			check: func(t *testing.T, p Plan) {
				if p.Hold != "" {
					t.Errorf("hold = %q", p.Hold)
				}
			},
		},
		"the storm breaker lets a rollout through and notes it": {
			changed: true,
			input:   func(in *Input) { in.Storm = delivery.Storm{Max: 2, Period: 10 * time.Minute} },
			want:    Roll,
			check: func(t *testing.T, p Plan) {
				v, ok := Verified(digest.Key{}, "u", delivery.RolloutsAnnotation, p.Annotations)
				if !ok || len(delivery.ParseRollouts(v)) != 1 {
					t.Errorf("rollouts = %q (signed %v)", p.Annotations[delivery.RolloutsAnnotation], ok)
				}
			},
		},
		"the storm breaker holds a workload that rolled Max times within the period": {
			changed: true,
			extra: map[string]string{delivery.RolloutsAnnotation: Sign(digest.Key{}, "u", delivery.RolloutsAnnotation,
				delivery.FormatRollouts([]time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)}))},
			input: func(in *Input) { in.Storm = delivery.Storm{Max: 2, Period: 10 * time.Minute} },
			want:  DeferredRollout,
			check: func(t *testing.T, p Plan) {
				if p.Deferral == nil || p.Deferral.Reason != DeferReason(delivery.HoldStorm) {
					t.Errorf("deferral = %+v", p.Deferral)
				}
				if !hasEvent(p.Events, delivery.ReasonRolloutStorm) {
					t.Errorf("events = %+v", p.Events)
				}
				if p.Annotations[RecordAnnotation] != "" {
					t.Errorf("a held rollout leaves the record as it is")
				}
			},
		},
		"the storm breaker counts no forged rollouts": {
			changed: true,
			extra: map[string]string{delivery.RolloutsAnnotation: delivery.FormatRollouts(
				[]time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)})},
			input: func(in *Input) { in.Storm = delivery.Storm{Max: 2, Period: 10 * time.Minute} },
			want:  Roll,
		},
		"without waves, bounds or halts, safe delivery reads only the order and the halts": {
			changed: true,
			input:   func(in *Input) { in.Delivery = &DeliveryInput{} },
			want:    Roll,
			reads:   []string{"Order", "Halts"},
			check: func(t *testing.T, p Plan) {
				if _, ok := p.Annotations[delivery.MemberAnnotation]; ok {
					t.Errorf("the fast path records no part in a change set")
				}
			},
		},
		"a halted change set holds the rollout and records the workload's part": {
			changed: true,
			input:   func(in *Input) { in.Delivery = &DeliveryInput{} },
			view: func(v *view) {
				v.halts = map[string]*delivery.Halt{cfgSet: {Halted: now.Add(-time.Hour), Failed: []string{"Deployment/ns/canary"}}}
			},
			want:  DeferredRollout,
			reads: []string{"Order", "Halts", "Member", "Members"},
			check: func(t *testing.T, p Plan) {
				if p.Deferral == nil || p.Deferral.Reason != DeferReason(delivery.HoldHalted) {
					t.Errorf("deferral = %+v", p.Deferral)
				}
				if !hasEvent(p.Events, delivery.ReasonChangeHalted) {
					t.Errorf("events = %+v", p.Events)
				}
				v, ok := Verified(digest.Key{}, "u", delivery.MemberAnnotation, p.Annotations)
				if rec, err := delivery.ParseRecord(v); !ok || err != nil || !rec.Of(cfgSet) || !rec.Rolled.IsZero() {
					t.Errorf("member record = %q (signed %v)", v, ok)
				}
				if len(p.Halts) != 0 {
					t.Errorf("a set halted before is not halted again: %+v", p.Halts)
				}
			},
		},
		"a failed member trips the breaker: the halt is for the writer to record first": {
			changed: true,
			input: func(in *Input) {
				in.Delivery = &DeliveryInput{Options: delivery.Options{HaltAfter: 1}}
			},
			view: func(v *view) {
				v.order = delivery.Order{Lowest: map[string]int{"ns": 0}}
				v.members = map[string][]delivery.Member{cfgSet: {{Workload: "Deployment/ns/canary", State: delivery.Failed,
					Record: delivery.Record{Sets: []string{cfgSet}, Objects: []string{"ConfigMap/ns/cfg"}, Rolled: now.Add(-time.Minute), Failed: "CrashLoopBackOff"}}}}
			},
			want:  DeferredRollout,
			reads: []string{"Order", "Halts", "Member", "Members"},
			check: func(t *testing.T, p Plan) {
				if len(p.Halts) != 1 || p.Halts[0].Set != cfgSet {
					t.Fatalf("halts = %+v", p.Halts)
				}
				h := p.Halts[0].Halt
				if !slices.Equal(h.Failed, []string{"Deployment/ns/canary"}) || !slices.Equal(h.Objects, []string{"ConfigMap/ns/cfg"}) {
					t.Errorf("halt = %+v", h)
				}
				if p.Deferral == nil || p.Deferral.Reason != DeferReason(delivery.HoldHalted) {
					t.Errorf("deferral = %+v", p.Deferral)
				}
			},
		},
		"a notification not yet sent is sent, and nothing else is written": {
			changed: true,
			opts:    func(o *Options) { o.WebhookURL = "https://hooks.example/x" },
			want:    Notify,
			reads:   []string{"Notification"},
			check: func(t *testing.T, p Plan) {
				if p.Notify != NotifySend || p.Requeue != NotifyPoll {
					t.Errorf("notify = %q, requeue %s", p.Notify, p.Requeue)
				}
			},
		},
		"a notification on its way waits": {
			changed: true,
			opts:    func(o *Options) { o.WebhookURL = "https://hooks.example/x" },
			view:    func(v *view) { v.notified = NotifyPending },
			want:    Notify,
			reads:   []string{"Notification"},
			check: func(t *testing.T, p Plan) {
				if p.Notify != NotifyWait || p.Requeue != NotifyPoll {
					t.Errorf("notify = %q, requeue %s", p.Notify, p.Requeue)
				}
			},
		},
		"a failed notification fails with its error": {
			changed: true,
			opts:    func(o *Options) { o.WebhookURL = "https://hooks.example/x" },
			view:    func(v *view) { v.notified, v.notifyErr = NotifyFailed, errors.New("503") },
			want:    Notify,
			reads:   []string{"Notification"},
			check: func(t *testing.T, p Plan) {
				if p.Notify != NotifyFail || p.NotifyFailure == nil || p.NotifyFailure.Error() != "503" {
					t.Errorf("notify = %q, failure %v", p.Notify, p.NotifyFailure)
				}
			},
		},
		"an accepted notification writes the record and restarts nothing": {
			changed: true,
			opts:    func(o *Options) { o.WebhookURL = "https://hooks.example/x" },
			view:    func(v *view) { v.notified = NotifyAccepted },
			want:    Notify,
			reads:   []string{"Notification"},
			check: func(t *testing.T, p Plan) {
				if p.Notify != NotifyRecord || p.Annotations[RecordAnnotation] == "" {
					t.Errorf("notify = %q, record %q", p.Notify, p.Annotations[RecordAnnotation])
				}
			},
		},
		"a restart by eviction evicts one pod at a time from the current record": {
			changed: true,
			way:     workload.ByEviction,
			input: func(in *Input) {
				in.Restart.Mode = eviction.Mode{Evict: true, MaxUnavailable: 1}
				in.Restart.Desired = 2
			},
			view:  func(v *view) { v.pods = []eviction.Pod{pod("web-b"), pod("web-a")} },
			want:  Roll,
			reads: []string{"Pods", "Current"},
			check: func(t *testing.T, p Plan) {
				if p.Eviction == nil || p.Eviction.Started != 2 || len(p.Eviction.Evict) != 1 || p.Eviction.Evict[0].Name != "web-a" {
					t.Fatalf("eviction = %+v", p.Eviction)
				}
				progress, err := eviction.ParseProgress(p.Annotations[eviction.ProgressAnnotation])
				if err != nil || progress == nil || len(progress.Pending) != 2 {
					t.Errorf("the record names both pods before any is evicted: %q", p.Annotations[eviction.ProgressAnnotation])
				}
			},
		},
		"a restart by eviction from a stale cache fails with the conflict": {
			changed: true,
			way:     workload.ByEviction,
			input:   func(in *Input) { in.Restart.Mode = eviction.Mode{Evict: true, MaxUnavailable: 1} },
			view: func(v *view) {
				v.pods = []eviction.Pod{pod("web-a")}
				v.current = errors.New("conflict: the cached workload is behind the API server")
			},
			wantErr: "conflict",
			reads:   []string{"Pods", "Current"},
		},
		"a restart by eviction is off: nothing restarts, and no pod is read": {
			changed: true,
			way:     workload.ByEviction,
			opts:    func(o *Options) { o.NoEviction = true },
			input:   func(in *Input) { in.Restart.Mode = eviction.Mode{Evict: true, MaxUnavailable: 1} },
			want:    NotRolled,
			check: func(t *testing.T, p Plan) {
				if p.Eviction != nil || !hasEvent(p.Events, ReasonEvictionDisabled) {
					t.Errorf("eviction %+v, events %+v", p.Eviction, p.Events)
				}
			},
		},
		"a malformed eviction record is dropped with a Warning": {
			extra: map[string]string{eviction.ProgressAnnotation: "{"},
			input: func(in *Input) { in.Restart.Mode = eviction.Mode{Evict: true, MaxUnavailable: 1} },
			want:  Unchanged,
			check: func(t *testing.T, p Plan) {
				if !hasEvent(p.Warnings, ReasonInvalidAnnotation) || p.Annotations[eviction.ProgressAnnotation] != "" {
					t.Errorf("warnings %+v, record %q", p.Warnings, p.Annotations[eviction.ProgressAnnotation])
				}
			},
		},
		"an operator's revert of Reroll's template change is recorded once, with who did it": {
			extra: map[string]string{revert.PatchAnnotation: reverted},
			input: func(in *Input) { in.Restart.TemplateInObject = true },
			view: func(v *view) {
				v.managers = []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply,
					Time: &metav1.Time{Time: now}, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{}}}`)}}}
			},
			want:  Unchanged,
			reads: []string{"Latest"},
			check: func(t *testing.T, p Plan) {
				rv := revert.ParseReverted(p.Annotations[revert.RevertedAnnotation])
				if !p.Reverted || rv == nil || rv.Manager != "argocd-controller" || p.Annotations[revert.PatchAnnotation] != "" {
					t.Errorf("reverted %v, record %q", p.Reverted, p.Annotations[revert.RevertedAnnotation])
				}
				if !hasEvent(p.Events, ReasonTemplateReverted) {
					t.Errorf("events = %+v", p.Events)
				}
			},
		},
		"a template put back after revert.Window is no revert and costs no read": {
			extra: map[string]string{revert.PatchAnnotation: stale},
			input: func(in *Input) { in.Restart.TemplateInObject = true },
			want:  Unchanged,
			check: func(t *testing.T, p Plan) {
				if p.Reverted || hasEvent(p.Events, ReasonTemplateReverted) {
					t.Errorf("reverted %v, events %+v", p.Reverted, p.Events)
				}
			},
		},
		"a revert the API server already records is not told again": {
			extra: map[string]string{revert.PatchAnnotation: reverted},
			input: func(in *Input) { in.Restart.TemplateInObject = true },
			view:  func(v *view) { v.latest = map[string]string{revert.RevertedAnnotation: `{"manager":"kubectl"}`} },
			want:  Unchanged,
			reads: []string{"Latest"},
			check: func(t *testing.T, p Plan) {
				if p.Reverted || hasEvent(p.Events, ReasonTemplateReverted) {
					t.Errorf("reverted %v, events %+v", p.Reverted, p.Events)
				}
			},
		},
		"a Wave workload that rolls reads its values for the hash": {
			changed: true,
			extra:   map[string]string{"wave.pusher.com/update-on-config-change": "true"},
			input:   func(in *Input) { delete(in.Annotations, "reroll.dev/auto") },
			want:    Roll,
			reads:   []string{"WaveHash"},
			check: func(t *testing.T, p Plan) {
				if tr := p.Roll.Trigger; tr.Deferred != DeferredWaveHash || tr.Value != "wave-hash-of-values" {
					t.Errorf("trigger = %+v", tr)
				}
				if err := p.Roll.Trigger.Set(&corev1.PodTemplateSpec{}); err != nil {
					t.Errorf("the writer sets a computed trigger: %v", err)
				}
			},
		},
		"a Wave workload held by the coalescing window reads no value": {
			changed: true,
			extra:   map[string]string{"wave.pusher.com/update-on-config-change": "true"},
			input: func(in *Input) {
				delete(in.Annotations, "reroll.dev/auto")
				in.Coalesce.Held = true
			},
			want: Roll,
			check: func(t *testing.T, p Plan) {
				if p.Hold != HoldCoalescing || p.Roll.Trigger.Deferred != DeferredWaveHash || p.Roll.Trigger.Value != "" {
					t.Errorf("hold %q, trigger %+v", p.Hold, p.Roll.Trigger)
				}
			},
		},
		"a template Reroll cannot tell the writer of costs no read": {
			extra: map[string]string{revert.PatchAnnotation: reverted},
			want:  Unchanged,
			check: func(t *testing.T, p Plan) {
				if p.Reverted {
					t.Errorf("a template outside the object is never called reverted")
				}
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			if c.opts != nil {
				c.opts(&o)
			}
			before := memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")}
			after := before
			if c.changed {
				after = memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")}
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
				Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}),
				Action: workload.Action{Way: workload.ByTemplate}, Restart: &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}}}
			if c.way != "" {
				in.Action.Way = c.way
			}
			recordFirstSight(t, o, &in, before, c.extra, c.input)
			var calls []string
			v := view{memory: after, calls: &calls}
			if c.view != nil {
				c.view(&v)
			}
			p, err := Decide(o, in, v)
			if !slices.Equal(calls, c.reads) {
				t.Errorf("reads = %v, want %v", calls, c.reads)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Errorf("outcome = %s, want %s", p.Outcome, c.want)
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
}

// changedAt returns a change to the View: cfg's data changed at, as the
// store saw it.
func changedAt(at time.Time) func(*view) {
	return func(v *view) {
		o := v.memory[cm("cfg")]
		o.History.Changed.At = at
		v.memory[cm("cfg")] = o
	}
}

// hasEvent reports whether events hold one with reason.
func hasEvent(events []Event, reason string) bool {
	return slices.ContainsFunc(events, func(e Event) bool { return e.Reason == reason })
}
