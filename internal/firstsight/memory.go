package firstsight

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Memory remembers the revision at which a workload's creation was seen
// on the watch, until its first sight is recorded: it orders, within the
// API's one-second resolution, the workload's creation against the changes
// the store saw (plan.Input.Since). It is memory only: after a restart the
// rule orders by seconds, which can only add a rollout, never lose one.
//
// It also keeps, per workload whose first-sight rollout is held for the
// coalescing window, the change it was first held for, so
// that a burst that goes on cannot hold it past the max-wait.
type Memory struct {
	mu    sync.Mutex
	byUID map[types.UID]uint64
	held  map[types.UID]time.Time
	// baseline is, per workload Reroll leaves unrecorded
	// (plan.Options.DeferRecord), the record it would have written on it.
	baseline map[types.UID]string
	// recent are the distinct records kept last, next the slot the next
	// one takes, the oldest: a record equal to one of them is kept as that string, so
	// the workloads that read the same objects (one ConfigMap read by
	// 2,000 Deployments) share one copy of their baseline. A fixed few, not
	// a table of every record: workloads that each read their own objects
	// cost nothing more.
	recent [recentRecords]string
	next   int
}

// recentRecords is how many distinct records Keep compares a new one with:
// enough for the workloads of the few shared objects being first seen at
// once (the reconciles of an install interleave them), few enough that the
// compare costs nothing beside the record's encoding.
const recentRecords = 16

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{byUID: map[types.UID]uint64{}, held: map[types.UID]time.Time{}, baseline: map[types.UID]string{}}
}

// Noted is a predicate that passes every event, and first notes each
// workload created while the informer watched (not those of its initial
// list) and forgets each deleted one. As a predicate it runs before the
// request is queued, so the first sight always finds the note.
func (c *Memory) Noted() predicate.Predicate {
	if c == nil {
		return predicate.Funcs{}
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if rv, err := strconv.ParseUint(e.Object.GetResourceVersion(), 10, 64); err == nil && !e.IsInInitialList {
				c.mu.Lock()
				c.byUID[e.Object.GetUID()] = rv
				c.mu.Unlock()
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			c.Forget(e.Object.GetUID())
			return true
		},
	}
}

// Since returns the revision of obj's creation when it was seen and
// nothing wrote obj's spec or opt-in in a later second (writtenAt is
// plan.WrittenAt), else 0.
func (c *Memory) Since(obj client.Object, writtenAt time.Time) uint64 {
	if c == nil || writtenAt.Unix() != obj.GetCreationTimestamp().Unix() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byUID[obj.GetUID()]
}

// Baseline returns the baseline kept in memory of workload uid, "" when
// none (plan.Options.DeferRecord).
func (c *Memory) Baseline(uid types.UID) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.baseline[uid]
}

// Keep keeps record as the baseline of workload uid, in place of a record
// on it: the first-sight rule is done with it while this process runs. A
// record equal to one kept recently is kept as that one's string.
func (c *Memory) Keep(uid types.UID, record string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byUID, uid)
	delete(c.held, uid)
	c.baseline[uid] = c.shared(record)
}

// shared returns the string among c.recent equal to record, which becomes
// the newest (the record of many workloads stays while the others of
// their own pass), else record, which then takes the oldest slot. The
// caller holds c.mu.
func (c *Memory) shared(record string) string {
	for i, r := range c.recent {
		if r == record {
			newest := (c.next + recentRecords - 1) % recentRecords
			c.recent[i], c.recent[newest] = c.recent[newest], r
			return r
		}
	}
	c.recent[c.next] = record
	c.next = (c.next + 1) % recentRecords
	return record
}

// HeldSince returns when the first-sight hold of workload uid began: the
// change at which it was first held, at, or the one noted at an earlier
// hold, until the workload is forgotten (recorded, opted out or deleted).
// A nil Memory notes nothing and returns at.
func (c *Memory) HeldSince(uid types.UID, at time.Time) time.Time {
	if c == nil {
		return at
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.held[uid]; ok {
		return first
	}
	c.held[uid] = at
	return at
}

// Forget forgets workload uid: recorded, opted out or deleted.
func (c *Memory) Forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.byUID, uid)
	delete(c.held, uid)
	delete(c.baseline, uid)
	c.mu.Unlock()
}
