package workload

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is one kind of workload with a pod template.
type Kind interface {
	// Name is the kind's name as the API spells it, e.g. "Deployment".
	Name() string
	// New returns an empty object of the kind.
	New() client.Object
	// NewList returns an empty list of the kind, for reads from the cache.
	NewList() client.ObjectList
	// PodTemplate returns a pointer into obj's pod template, so that
	// changes to it change obj. obj must be of the kind's type.
	PodTemplate(obj client.Object) *corev1.PodTemplateSpec
}

// Builtin returns the kinds that every cluster serves: Deployment,
// StatefulSet and DaemonSet.
func Builtin() []Kind {
	return []Kind{Deployment{}, StatefulSet{}, DaemonSet{}}
}

// Pausable is a Kind whose rollouts can be paused, for Reloader's
// pause-period: only Deployments.
type Pausable interface {
	// Paused reports spec.paused.
	Paused(obj client.Object) bool
	// SetPaused sets spec.paused.
	SetPaused(obj client.Object, paused bool)
}
