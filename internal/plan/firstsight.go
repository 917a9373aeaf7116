package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// The first-sight rule. A workload Reroll has no record of is recorded, and
// rolls once when, after the later of its pod template's last write and
// Reroll's installation, data it reads changed (or, with
// --reload-on-create and --reload-on-delete, an object it reads was created
// or deleted): a change made between the workload's creation and Reroll's
// first look at it (tens of milliseconds, or minutes while a fresh
// installation records every workload) is then rolled, never taken as the
// baseline. The order comes from what the API says (docs/design.md, "First
// sight"):
//   - times at the API server's one-second resolution: creationTimestamps
//     and the times of managedFields entries; an event in the same second as
//     the workload's last write counts as after it (a spurious rollout of a
//     workload seconds old beats a lost change), and so does one in the
//     same second as the installation: a change made while a fresh
//     installation starts rolls, at the price of rolling what changed in
//     the second before it;
//   - resourceVersions, where both sides are known, to order events within
//     a second: an object's resourceVersion is at least the revision of its
//     creation and of its latest data change, so one below the revision of
//     the workload's creation proves the event came before the workload.
// The creation of an object is not a change of its data: a workload created
// together with its ConfigMap, neither changed since, does not roll.

// InstalledAtAnnotation is the annotation on the digest key Secret that
// holds Reroll's installation time (RFC 3339, UTC), written once by the
// controller (state.LoadInstalledAt): the first-sight rule rolls only
// what happened after it (Options.InstalledAt). It lives in the cluster, so
// every replica, every restart and kubectl reroll read the same time.
const InstalledAtAnnotation = "reroll.dev/installed-at"

// InstalledAt returns the installation time that the digest key Secret's
// annotations hold, and whether they hold a valid one.
func InstalledAt(annotations map[string]string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, annotations[InstalledAtAnnotation])
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// Happened is when something happened, as the API tells it.
type Happened struct {
	// At is the time, whole seconds of the API server's clock (the zero
	// time: unknown, or it did not happen).
	At time.Time
	// ResourceVersion is the revision it happened at or an upper bound of
	// it, as a number; 0 when unknown.
	ResourceVersion uint64
}

// History is what the API says of one ConfigMap's or Secret's past.
type History struct {
	// Created is its creation (creationTimestamp; the resourceVersion is
	// the object's current one, an upper bound).
	Created Happened
	// Changed is the latest change of its data after its creation: zero At
	// when none is known (digest.Object.History).
	Changed Happened
}

// Deletions is implemented by a Source that remembers the objects deleted
// recently (the controller's store); the first-sight rule then knows that a
// missing object was deleted, and when.
type Deletions interface {
	// Deleted returns the latest deletion of the object, and whether one is
	// known.
	Deleted(kind reference.Kind, namespace, name string) (Happened, bool)
}

// after reports whether e happened after since (the workload's last pod
// template write) and after installed (Reroll's installation time), by the
// first-sight rule's order: whole seconds, an event in since's second or in
// installed's second counting as after it, and
// resourceVersions when both are known. A zero e.At, since.At or installed
// is never after.
func after(e, since Happened, installed time.Time) bool {
	if e.At.IsZero() || since.At.IsZero() || installed.IsZero() {
		return false
	}
	if e.At.Unix() < installed.Unix() || e.At.Unix() < since.At.Unix() {
		return false
	}
	if e.ResourceVersion != 0 && since.ResourceVersion != 0 && e.ResourceVersion < since.ResourceVersion {
		// Its revision, or an upper bound of it, comes before the workload.
		return false
	}
	return true
}

// firstSightChanges returns what the first-sight rule rolls for a
// workload without a record: one Diff per selected reference whose data
// changed (Keys empty: the API does not say which key), or that was created
// or deleted, after in.Since and o.InstalledAt, and the latest time among
// them. A reference the selection could not read counts as unchanged.
func firstSightChanges(o Options, in Input, sel selection, src Source) (out []Diff, latest time.Time) {
	note := func(d Diff, h Happened) {
		out = append(out, d)
		if h.At.After(latest) {
			latest = h.At
		}
	}
	deletions, _ := src.(Deletions)
	for _, ref := range sel.refs {
		ns := RefNamespace(ref, in.Namespace)
		if sel.data[ref.ID()] == nil {
			if deletions == nil || ref.Kind == reference.SecretProviderClass {
				continue
			}
			if d, ok := deletions.Deleted(ref.Kind, ns, ref.Name); ok && after(d, in.Since, o.InstalledAt) {
				note(Diff{Ref: ref, Deleted: true}, d)
			}
			continue
		}
		h, ok := sel.history[historyKey(ref.Kind, ns, ref.Name)]
		switch {
		case !ok:
		case after(h.Changed, in.Since, o.InstalledAt):
			note(Diff{Ref: ref}, h.Changed)
		case after(h.Created, in.Since, o.InstalledAt):
			note(Diff{Ref: ref, Created: true}, h.Created)
		}
	}
	return out, latest
}

// changedSinceAbsent returns d, or a data change of its object when d is
// the creation of an object that the record holds as absent but whose data
// changed after the workload's pod template was last written and after the
// installation (the first-sight rule's order, after). A record can hold an
// object as absent that existed when it was written: the store's watch of
// ConfigMaps and Secrets lags the workloads' (tens of milliseconds), so a
// first sight that comes just after a workload's creation may not yet see
// the object it reads, nor a change made to it right after. Without this,
// that change would count as the object's creation, held by
// --reload-on-create, and be lost. An object created after the record and
// then changed rolls too, as a change made after its creation rolls when
// the store sees both writes. An object never changed since its creation
// stays a creation.
func changedSinceAbsent(o Options, in Input, sel selection, d Diff) Diff {
	if !d.Created {
		return d
	}
	h, ok := sel.history[historyKey(d.Ref.Kind, RefNamespace(d.Ref, in.Namespace), d.Ref.Name)]
	if !ok || !after(h.Changed, in.Since, o.InstalledAt) {
		return d
	}
	return Diff{Ref: d.Ref}
}

// latestChange returns the latest time at which one of changes happened,
// as sel's history says: a data change, else the creation of a created
// object; the zero time when the history knows neither (a deletion, or an
// object listed with no managedFields time).
func latestChange(in Input, sel selection, changes []Diff) (latest time.Time) {
	for _, d := range changes {
		h, ok := sel.history[historyKey(d.Ref.Kind, RefNamespace(d.Ref, in.Namespace), d.Ref.Name)]
		if !ok || d.Deleted {
			continue
		}
		at := h.Changed.At
		if d.Created && h.Changed.At.IsZero() {
			at = h.Created.At
		}
		if at.After(latest) {
			latest = at
		}
	}
	return latest
}

func historyKey(kind reference.Kind, namespace, name string) string {
	return string(kind) + "/" + namespace + "/" + name
}

// SummaryManager is the manager of the one managedFields entry that the
// controller's cache keeps of a workload's: its time is WrittenAt's.
const SummaryManager = "reroll.dev/last-written"

// WrittenAt returns when the workload's pod template or opt-in was last
// written, as its managedFields say: the latest time among the entries
// (not of a subresource, not Reroll's own) that own a field of the spec or
// a metadata annotation, not counting annotations that Kubernetes'
// controllers write (*kubernetes.io/*); its creationTimestamp when that is
// later or no entry qualifies. It is an upper bound of the pod template's
// last write (an entry's time is that of its manager's latest change of
// any field), at one-second resolution. On a workload read from the
// controller's cache it reads the one entry of SummaryManager that the
// cache's transform left in place of the others.
func WrittenAt(obj metav1.Object) time.Time {
	at := obj.GetCreationTimestamp().Time
	for _, e := range obj.GetManagedFields() {
		if e.Time == nil || !e.Time.Time.After(at) {
			// No later than at: it cannot move at, whatever it owns (the
			// creator's entry, mostly, whose fields are the largest).
			continue
		}
		if e.Manager == SummaryManager || (e.Manager != workload.FieldManager && e.Subresource == "" && ownsSpecOrAnnotations(e.FieldsV1)) {
			at = e.Time.Time
		}
	}
	return at.UTC()
}
