package workload

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is one kind of workload with a pod template.
type Kind interface {
	// Name is the kind's name as the API spells it, e.g. "Deployment".
	Name() string
	// New returns an empty object of the kind (an Unstructured with its
	// GroupVersionKind for kinds Reroll has no Go type for).
	New() client.Object
	// NewList returns an empty list of the kind, for reads from the cache.
	NewList() client.ObjectList
	// PodTemplate returns obj's pod template; changes to it reach obj only
	// through SetPodTemplate. It returns an error when obj's template cannot
	// be decoded (an Unstructured object of the wrong shape).
	PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error)
	// SetPodTemplate writes t back into obj.
	SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error
}

// Plural returns the lower-case plural of a kind's name ("deployments"),
// the form --ignored-workload-types takes.
func Plural(k Kind) string { return strings.ToLower(k.Name()) + "s" }

// Rollout is what a Roller is asked to do.
type Rollout struct {
	// Original is the object as read; Desired is the same object with
	// Reroll's new record in its annotations and any other change the
	// reconciler made (a pause, for instance), not yet written.
	Original, Desired client.Object
	// Hash identifies the data that caused the rollout (lowercase hex); the
	// same data gives the same hash, so an action named after it is
	// idempotent.
	Hash string
	// Now is the time of the decision.
	Now time.Time
	// Patch writes Desired over Original as the reconciler does for any
	// kind (guarded by resourceVersion).
	Patch func(ctx context.Context, original, desired client.Object) error
	// SetTrigger writes the reconciler's rollout trigger into a pod
	// template, for kinds whose template lives in another object.
	SetTrigger func(t *corev1.PodTemplateSpec)
	// ReloaderDefaults is true when the workload opted in with Stakater
	// Reloader's annotations (or --auto-reload-all): what a kind does where
	// Reroll's default differs from Reloader's is then Reloader's, unless a
	// flag or the object's annotation says otherwise (see CronJobMode and
	// RecreateFinished).
	ReloaderDefaults bool
}

// TemplateReader is a Kind whose objects may keep their pod template in
// another object, such as an Argo Rollout with spec.workloadRef.
type TemplateReader interface {
	// ReadPodTemplate returns the pod template obj's pods run, reading the
	// referenced object through c when obj refers to one. It returns an
	// error when the reference cannot be read; a referenced object that does
	// not exist yields an empty template.
	ReadPodTemplate(ctx context.Context, c client.Reader, obj client.Object) (*corev1.PodTemplateSpec, error)
	// TemplateElsewhere reports whether obj's pod template lives in another
	// object, so that its references cannot be indexed from obj alone.
	TemplateElsewhere(obj client.Object) bool
}

// ErrShape marks an error decoding an object's pod template: the object does
// not have the shape its kind's configuration says, and retrying cannot help.
var ErrShape = errors.New("unexpected object shape")

// Roller is a Kind whose rollout, for some objects, is an action other than
// a pod template change: creating a Job from a CronJob, re-creating a Job,
// or setting an Argo Rollout's restartAt.
type Roller interface {
	// Roll performs the rollout and persists r.Desired. Errors are returned
	// for the reconciler to retry.
	Roll(ctx context.Context, c client.Client, r Rollout) (RollResult, error)
}

// RollResult is what a Roller did.
type RollResult struct {
	// Handled is false when the object rolls by the usual pod template
	// trigger instead; Roll has then done nothing.
	Handled bool
	// Rolled is false when, by design, nothing was restarted (a CronJob
	// whose next Job reads the new data, a finished Job).
	Rolled bool
	// Note says what was done, for the Event.
	Note string
}

// Filter is a Kind that leaves some of its objects alone, such as Jobs
// owned by a CronJob.
type Filter interface {
	// Handles reports whether Reroll should reconcile obj.
	Handles(obj client.Object) bool
}

// Pausable is a Kind whose rollouts can be paused, for Reloader's
// pause-period: only Deployments.
type Pausable interface {
	// Paused reports spec.paused.
	Paused(obj client.Object) bool
	// SetPaused sets spec.paused.
	SetPaused(obj client.Object, paused bool)
}

// Builtin returns the kinds with a pod template that every cluster serves
// and that roll by a template change: Deployment, StatefulSet and DaemonSet.
func Builtin() []Kind {
	return []Kind{Deployment{}, StatefulSet{}, DaemonSet{}}
}
