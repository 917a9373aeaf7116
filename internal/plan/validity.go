package plan

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/delivery"
)

// HoldInvalid is the hold reason (PendingAnnotation) of a workload whose
// change's new content fails a Validator's rule: nothing rolls for it until
// the content changes again to content that passes.
const HoldInvalid = "invalid"

// ReasonInvalidContent is the Warning Event on a ConfigMap or Secret whose
// new content fails a Validator's rule, and on each workload held for it;
// the note names the Validator, the rule and the key and says what is
// wrong, never quoting a Secret's value.
const ReasonInvalidContent = "InvalidContent"

// validity holds a plan that rolls when the new content of one of its
// changed ConfigMaps or Secrets fails a Validator's rule (HoldInvalid),
// before safe delivery lets the workload join a change set: nothing rolls
// for that content, in any wave. A copy in another shared namespace that a
// Validator checks and that has not received the content yet holds the
// plan for the change set's window (window; delivery.DefaultWindow when 0).
// The Warning Event InvalidContent goes on the workload when the hold
// starts. Only with in.Validate. It returns the error of v.Validity.
func (p *Plan) validity(o Options, in Input, v View, window time.Duration) error {
	if !in.Validate || p.Outcome != Roll || o.Overridden(in) {
		return nil
	}
	val, err := v.Validity(p.Changes)
	if err != nil {
		return err
	}
	since := PendingSince(o.Key, in.UID, in.Annotations, in.Now)
	if len(val.Failed) == 0 {
		if len(val.Awaited) == 0 {
			return nil
		}
		if window <= 0 {
			window = delivery.DefaultWindow
		}
		if until := since.Add(window); in.Now.Before(until) {
			p.holdBack(o, in, Deferral{Reason: DeferReason(delivery.HoldWave), Since: since, Until: until,
				Detail: "waiting for the copies that Validators check to receive the same content: " + strings.Join(val.Awaited, ", ")})
		}
		return nil
	}
	detail := "the new content fails validation: " + strings.Join(val.Failed, "; ")
	p.holdBack(o, in, Deferral{Reason: DeferReason(HoldInvalid), Detail: detail, Since: since})
	if len(p.Events) > 0 {
		// The pending mark changed: told once, as a Warning, and to the
		// alert sink (ALERT_ON_RELOAD), one message per held change.
		p.Events = append(p.Events, Event{Type: corev1.EventTypeWarning, Reason: ReasonInvalidContent,
			Note: "Held, nothing rolls: " + detail + "; it rolls once the content changes to content that passes"})
		a := p.Change.Alert()
		a.Invalid = &change.Invalid{Findings: slices.Clone(val.Failed)}
		p.Alert = &a
	}
	return nil
}
