package plan

import (
	"errors"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// Source is a read-only view of the ConfigMaps and Secrets a workload may
// consume: the controller backs it by its cache, the kubectl plugin by live
// reads or by manifests overlaid on them. It never holds values.
type Source interface {
	// Object returns what is known of one ConfigMap or Secret; ok is false
	// when it does not exist. An error wrapping ErrUnreadable means the
	// object could not be read (a user without `get secrets`): the plan
	// marks it and carries on; any other error fails Decide.
	Object(kind reference.Kind, namespace, name string) (o Object, ok bool, err error)
	// Names returns the names of the objects of kind in namespace, for
	// Reloader list entries that are patterns. An error wrapping
	// ErrUnreadable leaves the pattern unmatched and is noted.
	Names(kind reference.Kind, namespace string) ([]string, error)
}

// Object is what a Source holds of one ConfigMap or Secret.
type Object struct {
	// Annotations are the object's metadata annotations (Reloader's and
	// Reroll's ignore and match are read).
	Annotations map[string]string
	// Data holds the per-key SHA-256 digests and Reloader's SHA-1.
	Data digest.Data
	// UID and ResourceVersion identify the version of the object, for SAP
	// pod-reloader's dialect, where any write counts.
	UID, ResourceVersion string
	// History is when it was created and its data last changed, for the
	// first-sight rule; a Source that cannot tell leaves it zero (nothing
	// then rolls on first sight for this object).
	History History
}

// ErrUnreadable marks a Source error for an object the caller may not read.
var ErrUnreadable = errors.New("not readable")
