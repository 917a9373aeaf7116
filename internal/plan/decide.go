package plan

import (
	"time"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// Decide plans everything the controller does with one workload in one
// reconcile, and nothing changes the Plan afterwards. In order:
//  1. the change (DecideChange), compared under an older key when the
//     record was made under one (DecideRecord);
//  2. validation (View.Validity): new content that fails a Validator's
//     rule holds the plan (HoldInvalid) before any wave;
//  3. safe delivery (in.Delivery): the workload's part of its change sets,
//     a hold for an earlier wave or a halt, the halts to record; the
//     automatic undo of a versioned workload's failed rollout (undoFailed);
//  4. the storm breaker (in.Storm);
//  5. the holds (Hold): the coalescing window, a first-sight burst;
//  6. the notification step (Outcome Notify);
//  7. the restart (in.Restart): a restart by eviction, or the check for a
//     revert of Reroll's last template change;
//  8. the value of a deferred trigger (Wave's hash, View.WaveHash);
//  9. versioned config (pinning): the copies to make and the template
//     references to rename with the trigger, or on an opt-in;
//  10. Requeue.
//
// It reads only in and v, v lazily (see View), and writes nothing. It
// returns an error when a read of v fails.
func Decide(o Options, in Input, v View) (Plan, error) {
	p, err := DecideRecord(o, in, v)
	if err != nil {
		return Plan{}, err
	}
	var window time.Duration
	if in.Delivery != nil {
		window = in.Delivery.Options.Window
	}
	if err := p.validity(o, in, v, window); err != nil {
		return Plan{}, err
	}
	if in.Delivery != nil {
		if err := p.deliver(o, in, v); err != nil {
			return Plan{}, err
		}
		if err := p.undoFailed(o, in, v); err != nil {
			return Plan{}, err
		}
	}
	p.storm(o, in)
	if p.hold(in, v) {
		return p, nil
	}
	switch p.Outcome {
	case Deleting:
		return p, nil
	case Waiting, Refused:
		// Only Reroll's state is written; the record stays.
		p.Requeue = p.Recheck
		return p, nil
	case Notify:
		if !p.notify(v) {
			return p, nil
		}
	}
	if in.Restart != nil {
		if err := p.restart(o, in, v); err != nil {
			return Plan{}, err
		}
	}
	if err := p.waveHash(o, v); err != nil {
		return Plan{}, err
	}
	if err := p.pinning(o, in, v); err != nil {
		return Plan{}, err
	}
	p.Requeue = minPositive(p.Pause.RequeueAfter, p.Recheck)
	p.Settled = p.settles(o, in)
	return p, nil
}

// settles reports whether p is a plan whose write leaves the workload with
// nothing to decide (Plan.Settled). Each condition names what a decision on
// the written object could still do: wake up (Requeue, a pause), write
// (eviction progress, an undo, a pin or an opt-in pin of versioned
// config, a pending mark to clear, a membership of safe delivery's change
// sets, the bound's rolled-at stamp) or tell (Warnings).
func (p *Plan) settles(o Options, in Input) bool {
	return p.Outcome == Roll && p.Roll.Way == workload.ByTemplate && p.Roll.Trigger.Deferred == "" &&
		p.Requeue == 0 && p.Pause == (Pause{}) && in.Annotations[o.Annotations.Names.PausedAt] == "" &&
		p.Eviction == nil && p.Undo == nil && p.Pin == nil && len(in.Pins) == 0 && !p.versioned &&
		len(p.Halts) == 0 && p.Hold == "" && p.Deferral == nil && len(p.Warnings) == 0 && len(p.Problems) == 0 &&
		(in.Restart == nil || !in.Restart.Mode.Evict && len(in.Restart.Problems) == 0) &&
		!o.Bounded(in) && in.Annotations[PendingAnnotation] == "" && in.Annotations[RolledAtAnnotation] == "" &&
		in.Annotations[delivery.MemberAnnotation] == "" && p.Annotations[delivery.MemberAnnotation] == ""
}

// waveHash computes the value of a rollout's deferred trigger: Wave's hash
// of the values its references consume (Options.Compat of it), which only
// the API server holds. The writer then sets a trigger whose value is
// known.
func (p *Plan) waveHash(o Options, v View) error {
	tr := &p.Roll.Trigger
	if p.Outcome != Roll || tr.Deferred != DeferredWaveHash {
		return nil
	}
	h, err := v.WaveHash(tr.Namespace, tr.Wave)
	if err != nil {
		return err
	}
	tr.Value = o.Compat(tr.WorkloadKind, tr.Namespace, tr.WorkloadName, h)
	return nil
}

// hold sets Hold and Requeue when the plan is held back now, and reports
// whether it is. New holds go here, in the order of the Hold constants.
func (p *Plan) hold(in Input, v View) bool {
	if len(p.Changes) > 0 && in.Coalesce.Held {
		p.Hold = HoldCoalescing
		return true
	}
	if wait := firstSightWait(p, in, v); wait > 0 {
		p.Hold, p.Requeue = HoldFirstSight, wait
		return true
	}
	if wait := unheardWait(p, in); wait > 0 {
		p.Hold, p.Requeue = HoldCoalescing, wait
		return true
	}
	return false
}

// unheardWait is how long a change that the debounce may not have heard of
// yet waits for the rest of its burst: a reconcile the debounce did not
// start (the workload's own event, a requeue) can find in the cache a
// ConfigMap or Secret written a moment ago, before the informer's handler
// told the debounce of it. Rolling then, and again when the debounce ends
// the burst, would roll twice for one burst. So a change made within the
// last coalescing window (whole seconds, hence the second more) is held
// until the window after it has passed; by then the debounce holds the
// burst (and adds the request when it ends, within --coalesce-max-wait) or
// it has ended. It is 0 for the reconcile the debounce started, for a
// change whose time is unknown or older (a change made while Reroll was
// down rolls at once), and with coalescing off.
func unheardWait(p *Plan, in Input) time.Duration {
	c := in.Coalesce
	if c.Window <= 0 || c.BurstEnded || p.LatestChange.IsZero() || len(p.Changes) == 0 {
		return 0
	}
	return min(p.LatestChange.Add(time.Second+c.Window).Sub(in.Now), time.Second+c.Window)
}

// firstSightWait is how long a rollout found by the first-sight rule
// waits for the rest of its burst: a coalescing window after the latest
// change (whole seconds, hence the second more), at most MaxWait after it
// was first held; 0 when it does not wait.
func firstSightWait(p *Plan, in Input, v View) time.Duration {
	c := in.Coalesce
	if c.Window <= 0 || c.BurstEnded || p.FirstSightChanged.IsZero() || len(p.Changes) == 0 {
		return 0
	}
	wait := min(p.FirstSightChanged.Add(time.Second+c.Window).Sub(in.Now), time.Second+c.Window)
	if wait <= 0 {
		return 0
	}
	first := v.HeldSince(p.FirstSightChanged)
	return min(wait, first.Add(max(c.MaxWait, c.Window)).Sub(in.Now))
}

// notify sets the notification step, and reports whether the plan is
// written now (the endpoint accepted the notification).
func (p *Plan) notify(v View) bool {
	state, err := v.Notification(p.Key)
	switch state {
	case NotifyAccepted:
		p.Notify = NotifyRecord
		return true
	case NotifyPending:
		p.Notify, p.Requeue = NotifyWait, NotifyPoll
	case NotifyFailed:
		p.Notify, p.NotifyFailure = NotifyFail, err
	default:
		p.Notify, p.Requeue = NotifySend, NotifyPoll
	}
	return false
}

// DecideRecord is DecideChange, for a record made under one of o.Key's
// older keys (digest.Key.Older: during a rotation, the previous key;
// before in.LegacyRecordsUntil only, the legacy scheme of the current or
// previous key) compared under that key first, from v.Older: a change
// made while Reroll was upgraded, or its key rotated, still rolls. The
// record written is always the current key's: no digest of an older
// scheme is ever written (the legacy scheme, bound to no place, would
// publish the HMAC of a value a tenant chose). Once nothing under the
// older key is left to act on, the record is made again under the current
// key, as DecideChange does for a record of another key, which rolls
// nothing.
func DecideRecord(o Options, in Input, v KeyedSource) (Plan, error) {
	var older *digest.Key
	// A workload without a key's ID (first sight) has no record of an
	// older key: every key has an ID. Older copies its keys; the first
	// pass after a start asks this of every workload (issue #36).
	for _, k := range olderKeys(o.Key, in.Annotations[KeyAnnotation]) {
		if k.IsLegacy() && !in.Now.Before(in.LegacyRecordsUntil) {
			// Past the migration deadline: a record that names the legacy
			// scheme now is a tenant's, or was missed; it counts as a
			// record of another key.
			continue
		}
		if in.Annotations[KeyAnnotation] == k.ID() {
			older = &k
			break
		}
	}
	if older == nil {
		return DecideChange(o, in, v)
	}
	lo := o
	lo.Key = *older
	p, err := DecideChange(lo, in, v.Older(*older))
	if err != nil {
		return p, err
	}
	switch p.Outcome {
	case Unchanged, Skipped, DamagedRecord:
		// Nothing left to roll under the older key.
		return DecideChange(o, in, v)
	}
	// Everything written that derives from digests is the current key's:
	// the record, the config hash of the pod template, a Job's name, the
	// notification's hash.
	current, err := DecideChange(o, in, v)
	if err != nil {
		return p, err
	}
	if r := p.Annotations[RecordAnnotation]; r != "" {
		if rec := current.Annotations[RecordAnnotation]; rec != "" {
			p.Annotations[RecordAnnotation], p.Annotations[KeyAnnotation] = rec, o.Key.ID()
			p.Record = current.Record
		} else {
			delete(p.Annotations, RecordAnnotation)
			delete(p.Annotations, KeyAnnotation)
		}
	}
	hash := current.Record.ConfigHash()
	if p.Roll.Trigger.Annotation == trigger.ConfigHashAnnotation {
		p.Roll.Trigger.Value = hash
	}
	if p.Roll.Job != "" {
		p.Roll.Job = workload.JobName(in.Name, hash)
	}
	if p.Notification != nil {
		p.Notification.Hash = hash
	}
	return p, nil
}

// olderKeys returns k.Older(), or none when id, the ID of a record's key,
// is "", which no key has.
func olderKeys(k digest.Key, id string) []digest.Key {
	if id == "" {
		return nil
	}
	return k.Older()
}
