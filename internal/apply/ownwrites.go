package apply

import (
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWritesSize bounds how many writes OwnWrites keeps. An entry is used
// up when the watch event of its write arrives, normally within
// milliseconds, so the entries in use are about the writes in flight; an
// entry whose event never comes (the watch restarted, the workload was
// deleted) is dropped by newer ones, and an entry lost costs one ordinary
// reconcile, never one less.
const ownWritesSize = 1024

// OwnWrites remembers the workload writes of settled plans
// (plan.Plan.Settled), so that the watch event that carries one (Seen) is
// not reconciled: the decision on it would find the record current and
// write, tell and requeue nothing. On the fanout bench profile that was
// one reconcile in three (cache read, decision, comparison and their
// garbage), one per workload rolled.
//
// A settled plan's write is guarded by the resourceVersion it was decided
// on (plan.Plan.Settled is set only on rollouts, which workload.PatchGuarded
// writes), so exactly one write can follow that version, and a successful
// write of Reroll's is it. The watch event may arrive before the write's
// answer is read: an update from that version while the write is in
// flight is taken as Reroll's (Expect). Had the write failed, another
// writer's update would be lost with it, but a failed write is decided
// again anyway, from the API server's copy (a conflict, Reconcile's retry)
// or after the error's backoff. The memory is in-process only: a restart
// reconciles every workload anyway.
type OwnWrites struct {
	writes *lru.Cache
}

// ownWrite is one write: from the resourceVersion decided on to the one
// returned ("" while the write is in flight).
type ownWrite struct{ from, to string }

// NewOwnWrites returns an empty OwnWrites.
func NewOwnWrites() *OwnWrites {
	return &OwnWrites{writes: lru.New(ownWritesSize)}
}

// Expect records that a write of a settled plan over obj (the workload as
// the plan was decided on) is about to be sent; Written or Failed follows.
// A nil OwnWrites records nothing.
func (o *OwnWrites) Expect(obj client.Object) {
	if o == nil || obj.GetUID() == "" || obj.GetResourceVersion() == "" {
		return
	}
	o.writes.Add(obj.GetUID(), ownWrite{from: obj.GetResourceVersion()})
}

// Written records the answer of the write Expect announced: after, as the
// API server returned it. A write that changed nothing (the same
// resourceVersion) makes no event, and is forgotten.
func (o *OwnWrites) Written(before, after client.Object) {
	if o == nil {
		return
	}
	v, ok := o.writes.Get(after.GetUID())
	if !ok {
		// Its event came first, and was taken.
		return
	}
	w := v.(ownWrite)
	if w.from != before.GetResourceVersion() || after.GetResourceVersion() == w.from {
		o.writes.Remove(after.GetUID())
		return
	}
	w.to = after.GetResourceVersion()
	o.writes.Add(after.GetUID(), w)
}

// Failed forgets the write Expect announced.
func (o *OwnWrites) Failed(obj client.Object) {
	if o != nil {
		o.writes.Remove(obj.GetUID())
	}
}

// Seen reports whether an update from old to updated is a write of a
// settled plan, and uses its record up: an update from the version the
// write was decided on, to the version the write returned, or while the
// write is in flight. Any other update is not.
func (o *OwnWrites) Seen(old, updated client.Object) bool {
	if o == nil || old == nil || updated == nil {
		return false
	}
	uid := updated.GetUID()
	v, ok := o.writes.Get(uid)
	if !ok || old.GetUID() != uid || old.GetResourceVersion() == updated.GetResourceVersion() {
		return false
	}
	w := v.(ownWrite)
	if w.from != old.GetResourceVersion() || w.to != "" && w.to != updated.GetResourceVersion() {
		return false
	}
	o.writes.Remove(uid)
	return true
}
