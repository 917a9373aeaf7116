package eviction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Pod is what the decision needs of one pod of the workload.
type Pod struct {
	// Name and UID identify the pod.
	Name string
	UID  types.UID
	// Created is the pod's creationTimestamp (second precision).
	Created time.Time
	// Ready is the pod's Ready condition.
	Ready bool
	// Terminating is set when the pod has a deletionTimestamp: it was
	// evicted or deleted and is going away.
	Terminating bool
	// Owned is set when the pod has a controller owner reference, something
	// that re-creates it once it is evicted.
	Owned bool
}

// Change is a change of the consumed data, seen in this reconcile, that the
// pods have to pick up.
type Change struct {
	// Hash is the configuration hash of the new data.
	Hash string
	// At is when Reroll saw the change.
	At time.Time
}

// Input is everything Decide looks at.
type Input struct {
	// Pods are the workload's pods, as the cache holds them.
	Pods []Pod
	// Progress is the recorded restart under way; nil when none is.
	Progress *Progress
	// Change is the change seen now; nil when the consumed data is as
	// recorded.
	Change *Change
	// Desired is how many pods the owner keeps running (a Deployment's
	// spec.replicas); 0 means unknown, and then the pods seen count.
	Desired int
	// HighestOrdinalFirst evicts pods in descending order of the ordinal
	// that ends their name (a StatefulSet's), as the StatefulSet
	// controller's own rolling update does; otherwise by name.
	HighestOrdinalFirst bool
	// MaxUnavailable is how many of the pods may be unavailable at once
	// (reroll.dev/max-unavailable); less than 1 counts as 1. The time of a
	// change is in Change; nothing else depends on the time.
	MaxUnavailable int
}

// Decision is what to do for one workload now.
type Decision struct {
	// Progress is the record to write; nil removes it (no restart under
	// way). The caller removes each pod it evicts (Progress.Without) before
	// writing it.
	Progress *Progress
	// Evict lists the pods to evict now, in order.
	Evict []PodRef
	// Started is the number of pods to evict when a restart starts (or a
	// new change is folded into one) in this decision, for the Evicting
	// Event; 0 otherwise.
	Started int
	// Done is set when the restart finished in this decision: every pod was
	// evicted and the replacements are Ready (the Evicted Event).
	Done bool
	// Waiting, when set, says why no further pod is evicted now although
	// some are still pending.
	Waiting string
	// Bare names the pods, sorted, that would have been evicted but have no
	// owner to re-create them: they are never evicted.
	Bare []string
}

// Decide returns what to do next in a restart by eviction. It is pure.
//
// A change starts a restart: every pod of the workload that exists now and
// was created no later than the change (second precision, as Kubernetes
// records creation) is to be evicted; pods created later read the new data
// already. A change during a restart is folded in the same way: the pods
// still pending, and those replaced before the new change, are to be
// evicted; those replaced after it are not. Pods without an owner are
// never evicted (Bare).
//
// A pending pod that no longer exists, has a new UID, or is terminating
// was evicted (perhaps by a Reroll that was killed before it could record
// so) and is never evicted again. Pods that are not Ready are evicted
// first and at any time, since evicting them costs no availability; Ready
// ones are evicted while fewer than MaxUnavailable of the Desired pods are
// unavailable (not Ready, missing or terminating), which is how the
// replacement of one pod must be Ready before the next is evicted. The
// restart is done once no pod is pending and all Desired pods are Ready.
func Decide(in Input) Decision {
	var d Decision
	progress := in.Progress
	if in.Change != nil {
		progress = &Progress{Hash: in.Change.Hash, Since: in.Change.At.UTC().Truncate(time.Second)}
		for _, p := range in.Pods {
			if p.Terminating || p.Created.After(progress.Since) {
				continue
			}
			if !p.Owned {
				d.Bare = append(d.Bare, p.Name)
				continue
			}
			progress.Pending = append(progress.Pending, PodRef{Name: p.Name, UID: p.UID})
		}
		slices.SortFunc(progress.Pending, func(a, b PodRef) int {
			if in.HighestOrdinalFirst {
				if c := ordinal(b.Name) - ordinal(a.Name); c != 0 {
					return c
				}
			}
			return strings.Compare(a.Name, b.Name)
		})
		slices.Sort(d.Bare)
		d.Started = len(progress.Pending)
	}
	if progress == nil {
		return d
	}

	byUID := map[types.UID]Pod{}
	ready, terminating := 0, 0
	for _, p := range in.Pods {
		byUID[p.UID] = p
		switch {
		case p.Terminating:
			terminating++
		case p.Ready:
			ready++
		}
	}
	// Pending pods that are gone, replaced or terminating were evicted.
	var gone []types.UID
	var unready, readyPending []PodRef
	for _, ref := range progress.Pending {
		p, ok := byUID[ref.UID]
		switch {
		case !ok || p.Terminating:
			gone = append(gone, ref.UID)
		case !p.Ready:
			unready = append(unready, ref)
		default:
			readyPending = append(readyPending, ref)
		}
	}
	if len(gone) > 0 {
		keep := progress.BlockedSince
		progress = progress.Without(gone...)
		// A pod that went away without Reroll's eviction ends no block.
		progress.BlockedSince = keep
	}

	desired := in.Desired
	if desired <= 0 {
		desired = len(in.Pods) - terminating
	}
	unavailable := max(desired-ready, terminating, 0)
	if len(progress.Pending) == 0 {
		if unavailable == 0 {
			// A change that found no pod to evict started nothing.
			d.Done = in.Change == nil
			return d
		}
		d.Progress = progress
		d.Waiting = fmt.Sprintf("waiting for %d of %d pods to be Ready", unavailable, desired)
		return d
	}
	d.Progress = progress
	// Evicting a pod that is not Ready costs no availability.
	d.Evict = append(d.Evict, unready...)
	budget := max(in.MaxUnavailable, 1) - unavailable
	for i := 0; i < len(readyPending) && i < budget; i++ {
		d.Evict = append(d.Evict, readyPending[i])
	}
	if len(d.Evict) < len(progress.Pending) {
		d.Waiting = fmt.Sprintf("%d of %d pods unavailable, at most %d allowed; %d pods still to evict", unavailable, desired, max(in.MaxUnavailable, 1), len(progress.Pending)-len(d.Evict))
	}
	return d
}

// ordinal is the integer after the last "-" of a pod's name, -1 when there
// is none.
func ordinal(name string) int {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}
