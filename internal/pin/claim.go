package pin

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationClaimedAt is written on an existing copy that a workload is
// about to name again while already one of its owners (a rollback to an
// older content, a retried rollout): the write restarts the grace during
// which the copies' garbage collection (internal/pingc) keeps a copy that
// nothing names yet, so the copy is not deleted between this check and the
// workload's template write. RFC 3339, UTC.
const AnnotationClaimedAt = "reroll.dev/claimed-at"

// ClaimEvery is how old a copy's last write may be before a workload that
// names it again writes AnnotationClaimedAt: half of pingc.DefaultGrace,
// so that a claim always lands within the grace, and a copy is written at
// most once a minute.
const ClaimEvery = time.Minute

// NeedsClaim reports whether obj, a copy read from the API server, was
// last written (created, or any write its managedFields record) more than
// ClaimEvery before now.
func NeedsClaim(obj metav1.Object, now time.Time) bool {
	return now.Sub(LastWrite(obj)) > ClaimEvery
}

// LastWrite is the time of obj's latest write that the API server
// records: its creation, or a later write in its managedFields (the
// garbage collection keeps a copy for its grace after it).
func LastWrite(obj metav1.Object) time.Time {
	last := obj.GetCreationTimestamp().Time
	for _, e := range obj.GetManagedFields() {
		if e.Time != nil && e.Time.After(last) {
			last = e.Time.Time
		}
	}
	return last
}
