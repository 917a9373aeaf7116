package pingc

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/reference"
)

// Copy is what the collector knows of one copy of a ConfigMap or Secret
// in the namespace being collected, read from its metadata.
type Copy struct {
	// Kind is reference.ConfigMap or reference.Secret; Name is the copy's
	// name.
	Kind reference.Kind
	Name string
	// UID and ResourceVersion are the preconditions of its delete.
	UID             types.UID
	ResourceVersion string
	// Signed is true when the copy's keyed signature verifies: Reroll made
	// it. Only signed copies are ever deleted.
	Signed bool
	// Created is the copy's creation time.
	Created time.Time
	// LastWrite is the latest of its creation and of the writes that its
	// managedFields record (a claim, pin.AnnotationClaimedAt, when a workload
	// claims it, for one); the copy is kept for Grace after it.
	LastWrite time.Time
	// Deleting is true when the copy has a deletionTimestamp already.
	Deleting bool
}

// key is the identity of a name of kind in one namespace.
type key struct {
	kind reference.Kind
	name string
}

// Names is the set of ConfigMaps and Secrets that some objects of one
// namespace name. The zero value is empty and ready to use.
type Names struct {
	set map[key]struct{}
}

// Add records that something names the object kind/name.
func (n *Names) Add(kind reference.Kind, name string) {
	if n.set == nil {
		n.set = map[key]struct{}{}
	}
	n.set[key{kind, name}] = struct{}{}
}

// AddAll adds every name of o.
func (n *Names) AddAll(o Names) {
	for k := range o.set {
		n.Add(k.kind, k.name)
	}
}

// Has reports whether kind/name is named.
func (n Names) Has(kind reference.Kind, name string) bool {
	_, ok := n.set[key{kind, name}]
	return ok
}

// Len is how many objects are named.
func (n Names) Len() int { return len(n.set) }

// Options are the collector's timings.
type Options struct {
	// Grace is how long after its last write a copy is kept even when
	// nothing names it: the time a workload's template write may take
	// after the copy was created or claimed for it. DefaultGrace when 0.
	Grace time.Duration
	// Period is how often a namespace with copies is looked at again.
	// DefaultPeriod when 0.
	Period time.Duration
}

// DefaultGrace and DefaultPeriod are the collector's defaults: a copy
// that nothing names is deleted between Grace and Grace+Period after its
// last write, or within Period after the last object naming it is gone.
const (
	DefaultGrace  = 2 * time.Minute
	DefaultPeriod = 30 * time.Second
)

func (o Options) grace() time.Duration {
	if o.Grace > 0 {
		return o.Grace
	}
	return DefaultGrace
}

func (o Options) period() time.Duration {
	if o.Period > 0 {
		return o.Period
	}
	return DefaultPeriod
}

// Candidates returns the copies that nothing in named names and that
// Reroll may delete some day: signed, not already being deleted. The
// gatherer reads the objects that could name a copy one kind at a time,
// and stops as soon as no candidate is left.
func Candidates(copies []Copy, named Names) []Copy {
	var out []Copy
	for _, c := range copies {
		if c.Signed && !c.Deleting && !named.Has(c.Kind, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// Reason says why a copy is kept.
type Reason string

// Why a copy is kept.
const (
	// KeptNamed: a workload's template, a ReplicaSet, a ControllerRevision,
	// a Job or a pod names it.
	KeptNamed Reason = "Named"
	// KeptUnsigned: its signature does not verify; a tenant may have made
	// it, and Reroll deletes only what it made.
	KeptUnsigned Reason = "Unsigned"
	// KeptRecent: nothing names it, but it was written less than Grace
	// ago.
	KeptRecent Reason = "Recent"
	// KeptDeleting: it is being deleted already.
	KeptDeleting Reason = "Deleting"
)

// Kept is a copy the collector leaves, and why.
type Kept struct {
	Copy   Copy
	Reason Reason
}

// Decision is what to do with the copies of one namespace.
type Decision struct {
	// Delete are the copies to delete, each with its UID and
	// resourceVersion as preconditions, sorted by kind and name.
	Delete []Copy
	// Kept are the others, with the reason, sorted by kind and name.
	Kept []Kept
	// Requeue is when to look at the namespace again: Period while copies
	// remain after the deletes, sooner when a recent copy's grace ends
	// first; 0 when none remains (a new copy's event brings the namespace
	// back).
	Requeue time.Duration
}

// Decide returns which of copies to delete at now, when named holds every
// ConfigMap and Secret that the namespace's workload templates,
// ReplicaSets, ControllerRevisions, Jobs and pods name. named must be
// complete: a name left out is a copy deleted in use. Pure.
func Decide(copies []Copy, named Names, now time.Time, o Options) Decision {
	var d Decision
	remaining := 0
	var nextGraceEnd time.Duration
	for _, c := range copies {
		switch {
		case c.Deleting:
			d.Kept = append(d.Kept, Kept{c, KeptDeleting})
			continue
		case !c.Signed:
			d.Kept = append(d.Kept, Kept{c, KeptUnsigned})
			continue
		case named.Has(c.Kind, c.Name):
			d.Kept = append(d.Kept, Kept{c, KeptNamed})
		case now.Sub(c.LastWrite) < o.grace():
			d.Kept = append(d.Kept, Kept{c, KeptRecent})
			if left := c.LastWrite.Add(o.grace()).Sub(now); nextGraceEnd == 0 || left < nextGraceEnd {
				nextGraceEnd = left
			}
		default:
			d.Delete = append(d.Delete, c)
			continue
		}
		remaining++
	}
	if remaining > 0 {
		d.Requeue = o.period()
		if nextGraceEnd > 0 && nextGraceEnd+time.Second < d.Requeue {
			// A second after the grace ends: LastWrite has whole seconds.
			d.Requeue = nextGraceEnd + time.Second
		}
	}
	sortCopies(d.Delete, func(c Copy) Copy { return c })
	sortCopies(d.Kept, func(k Kept) Copy { return k.Copy })
	return d
}

func sortCopies[T any](s []T, c func(T) Copy) {
	sort.SliceStable(s, func(i, j int) bool {
		a, b := c(s[i]), c(s[j])
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
}
