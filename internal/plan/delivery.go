package plan

import (
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/reference"
)

// deliver decides, for a workload whose plan rolls or which takes part in
// a change set, what safe delivery does (delivery.Decide): it holds the
// rollout for an earlier wave or a halt, records the workload's part of
// the set in the plan's write, and adds the halt of a set whose breaker
// tripped to Halts. A workload that rolls with no wave anywhere and no
// bound, and has no part in a set, costs a lookup of the halts in memory
// only. Its steps: join (the sets a rollout joins), decideSets (each
// set's decision), settle (the hold, and the member record to write).
func (p *Plan) deliver(o Options, in Input, v View) error {
	// Only a record Reroll signed counts; a forged one is removed by
	// DecideChange (ForgedState) and the workload joins afresh.
	raw, member := Verified(o.Key, in.UID, delivery.MemberAnnotation, in.Annotations)
	rolling := p.Outcome == Roll && !o.Overridden(in)
	if !rolling && !member {
		return nil
	}
	old, err := delivery.ParseRecord(raw)
	if err != nil {
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, err.Error() + "; replacing it"})
		old = delivery.Record{}
	}
	order, err := v.Order()
	if err != nil {
		return err
	}
	halts, err := v.Halts()
	if err != nil {
		return err
	}
	rec := old
	if rolling {
		var joins bool
		if rec, joins = p.join(o, in, v, order, halts, old, member); !joins {
			return nil
		}
	}
	if len(rec.Sets) == 0 {
		return nil
	}
	self, hold, err := p.decideSets(o, in, v, order, halts, rec)
	if err != nil {
		return err
	}
	if rec := self.Record; rec.Failed != "" && old.Failed == "" && !rec.Rolled.IsZero() {
		// Its own rollout failed, seen now: versioned config may undo it.
		p.failedNow, p.failedSets = rec.Failed, rec.Sets
	}
	p.settle(o, in, raw, self.Record, hold, rolling)
	return nil
}

// join returns old joined to the change sets of the plan's changes, at the
// workload's position in the waves; false when safe delivery has nothing
// to do with the rollout (the fast paths: nothing waits for a wave here,
// nothing is tracked, no halt of its sets is recorded).
func (p *Plan) join(o Options, in Input, v View, order delivery.Order, halts map[string]*delivery.Halt, old delivery.Record, member bool) (delivery.Record, bool) {
	ns := in.Namespace
	if !order.Tracked(ns) && !o.Bounded(in) && !member && !anyActive(halts, nil) {
		// The fast path: nothing waits for a wave here, nothing is
		// tracked, no halt is recorded.
		return old, false
	}
	sets, objects := p.setsOf(o, in, v, order.Scope(ns))
	if !order.Tracked(ns) && !o.Bounded(in) && !member && !anyActive(halts, sets) {
		// Only a recorded halt of one of its sets holds.
		return old, false
	}
	pos, werr := delivery.PositionOf(in.Annotations, in.NamespaceAnnotations)
	if werr != nil {
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring " + werr.Error()})
	}
	if !order.Shared(ns) {
		// The Namespace's wave counts only where the operator set it
		// and Reroll read it (order): elsewhere all is place 0.
		pos.Place = 0
	}
	return old.Join(sets, objects, pos), true
}

// decideSets decides each set of rec (delivery.Decide, with the other
// members read through v), adds the halts to record to p and the soonest
// recheck; it returns the workload as a member, with its record as the
// decisions left it, and the first decision that holds it (none: the zero
// Decision). It returns the error of a read.
func (p *Plan) decideSets(o Options, in Input, v View, order delivery.Order, halts map[string]*delivery.Halt, rec delivery.Record) (delivery.Member, delivery.Decision, error) {
	var hold delivery.Decision
	self, err := v.Member(rec)
	if err != nil {
		return self, hold, err
	}
	do := in.Delivery.Options
	do.First = order.First(in.Namespace)
	for _, id := range rec.Sets {
		set := delivery.Set{ID: id, Halt: halts[id]}
		if set.Members, err = v.Members(id); err != nil {
			return self, hold, err
		}
		d := delivery.Decide(do, set, self, in.Now)
		self.Record = d.Record
		p.Recheck = minPositive(p.Recheck, d.Recheck)
		if d.Halt != nil {
			p.Halts = append(p.Halts, haltRecord(set, *d.Halt, self))
		}
		if d.Hold != "" && hold.Hold == "" {
			hold = d
		}
	}
	return self, hold, nil
}

// settle holds the rollout back when hold holds it (a halt is told once,
// as a Warning), or stamps the rollout in the member record rec, and
// writes rec, signed, when it differs from raw, the record read.
func (p *Plan) settle(o Options, in Input, raw string, rec delivery.Record, hold delivery.Decision, rolling bool) {
	if hold.Hold != "" {
		p.holdBack(o, in, Deferral{Reason: DeferReason(hold.Hold), Detail: hold.Detail, Since: PendingSince(o.Key, in.UID, in.Annotations, in.Now), Until: hold.Until})
		if hold.Hold == delivery.HoldHalted && len(p.Events) > 0 {
			// The pending mark changed: told once, as a Warning.
			p.Events = append(p.Events, Event{corev1.EventTypeWarning, delivery.ReasonChangeHalted, "Held: " + hold.Detail})
		}
	} else if rolling {
		rec.Rolled = in.Now.UTC().Truncate(time.Second)
		rec.Healthy, rec.Failed = time.Time{}, ""
	}
	if s := rec.String(); s != raw {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[delivery.MemberAnnotation] = Sign(o.Key, in.UID, delivery.MemberAnnotation, s)
	}
}

// setsOf returns the change sets of the plan's changes (sorted, without
// duplicates) in scope (delivery.Order.Scope of the workload's namespace),
// and the changed objects, "Kind/namespace/name".
func (p *Plan) setsOf(o Options, in Input, src Source, scope string) ([]string, []string) {
	var sets, objects []string
	for _, c := range p.Changes {
		ns := c.Ref.Namespace
		if ns == "" {
			ns = in.Namespace
		}
		objects = append(objects, string(c.Ref.Kind)+"/"+ns+"/"+c.Ref.Name)
		// The content: the digest of the whole object (Reloader's SHA-1,
		// never written anywhere unkeyed). Not the per-key digests: under
		// a real key they are bound to their namespace, and the copies
		// would be as many sets.
		content := ""
		deleted := c.Deleted
		if c.Ref.Kind == reference.ConfigMap || c.Ref.Kind == reference.Secret {
			obj, ok, err := src.Object(c.Ref.Kind, ns, c.Ref.Name)
			if err == nil && ok {
				content = obj.Data.ReloaderSHA1
			} else {
				deleted = true
			}
		}
		sets = append(sets, delivery.SetID(o.Key, scope, string(c.Ref.Kind), c.Ref.Name, content, deleted))
	}
	sort.Strings(sets)
	sort.Strings(objects)
	return slices.Compact(sets), slices.Compact(objects)
}

// haltRecord is halt h of set, with the changed objects of every member
// (self included).
func haltRecord(set delivery.Set, h delivery.Halt, self delivery.Member) HaltRecord {
	objects := slices.Clone(self.Objects)
	for _, m := range set.Members {
		objects = append(objects, m.Objects...)
	}
	sort.Strings(objects)
	h.Objects = slices.Compact(objects)
	return HaltRecord{Set: set.ID, Halt: h}
}

// anyActive reports whether any of sets is halted; with sets nil, whether
// any set is.
func anyActive(halts map[string]*delivery.Halt, sets []string) bool {
	if sets == nil {
		for _, h := range halts {
			if h.Active() {
				return true
			}
		}
		return false
	}
	for _, id := range sets {
		if halts[id].Active() {
			return true
		}
	}
	return false
}

// storm holds a rollout of a workload that Reroll rolled in.Storm.Max
// times within in.Storm.Period (the storm breaker), with a RolloutStorm
// Warning Event, until the oldest of them leaves the period or the user
// removes delivery.RolloutsAnnotation (kubectl reroll resume); a rollout
// it lets through is noted in that annotation, in the same patch.
func (p *Plan) storm(o Options, in Input) {
	s := in.Storm
	if p.Outcome != Roll || s.Max <= 0 || o.Overridden(in) {
		return
	}
	// Only the times Reroll signed count: a forged list holds nothing.
	latest, _ := Verified(o.Key, in.UID, delivery.RolloutsAnnotation, in.Annotations)
	ok, kept, until, detail := s.Allow(delivery.ParseRollouts(latest), in.Now)
	if ok {
		p.Annotations[delivery.RolloutsAnnotation] = Sign(o.Key, in.UID, delivery.RolloutsAnnotation, delivery.FormatRollouts(kept))
		return
	}
	p.holdBack(o, in, Deferral{Reason: DeferReason(delivery.HoldStorm), Detail: detail, Since: PendingSince(o.Key, in.UID, in.Annotations, in.Now), Until: until})
	if len(p.Events) > 0 {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, delivery.ReasonRolloutStorm, "Held: " + detail})
	}
}
