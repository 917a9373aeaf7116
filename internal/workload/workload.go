package workload

import (
	"context"
	"errors"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/revert"
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
	// Reroll's new record in its annotations and any other change the plan
	// made, not yet written.
	Original, Desired client.Object
	// Patch writes Desired over Original, guarded by resourceVersion; it is
	// Patch of this package.
	Patch func(ctx context.Context, original, desired client.Object) error
	// Journal, when set, keeps a Job's manifest durably between its delete
	// and its re-creation (see JobJournal); nil keeps it in memory only.
	Journal JobJournal
}

// JobJournal keeps the manifest of a Job that Reroll re-creates, outside the
// Job, from before the delete until the new Job exists, so that a crash, a
// leader change, a failed create or a cancelled context in between never
// loses the Job: whoever reconciles next re-creates it from the journal.
type JobJournal interface {
	// Save records fresh, the Job to create, in place of the Job with UID
	// old. It must be durable when it returns.
	Save(ctx context.Context, fresh *batchv1.Job, old types.UID) error
	// Done forgets the entry of the Job namespace/name.
	Done(ctx context.Context, namespace, name string) error
}

// TemplateReader is a Kind whose objects may keep their pod template in
// another object, such as an Argo Rollout with spec.workloadRef.
type TemplateReader interface {
	// ReadPodTemplate returns the pod template obj's pods run, reading the
	// referenced object through c when obj refers to one. It returns an
	// error when the reference cannot be read; a referenced object that does
	// not exist yields an empty template.
	ReadPodTemplate(ctx context.Context, c client.Reader, obj client.Object) (*corev1.PodTemplateSpec, error)
	// TemplateFrom returns the name of the Deployment, in obj's namespace,
	// whose pod template obj's pods run; false when obj's template is its
	// own. The references of such an object cannot be indexed from obj
	// alone, and a change to that Deployment's template changes them.
	TemplateFrom(obj client.Object) (string, bool)
}

// ErrShape marks an error decoding an object's pod template: the object does
// not have the shape its kind's configuration says, and retrying cannot help.
var ErrShape = errors.New("unexpected object shape")

// Roller is a Kind whose rollout is a write of its own, beyond a patch of
// the object: re-creating a Job.
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
	// Rolled is false when, by design, nothing was restarted.
	Rolled bool
	// Note says what was done, for the Event.
	Note string
}

// Way is how an object rolls.
type Way string

const (
	// ByTemplate writes Reroll's trigger into the object's own pod template
	// (or the annotations map of an Unstructured kind's AnnotationsPath).
	ByTemplate Way = "template"
	// ByWorkloadRef writes the trigger into the pod template of the
	// Deployment that an Argo Rollout's spec.workloadRef names; Argo
	// watches that template.
	ByWorkloadRef Way = "workload-ref"
	// ByRestartAt sets an Argo Rollout's spec.restartAt (Reloader's
	// rollout-strategy restart); Argo restarts the pods.
	ByRestartAt Way = "restart-at"
	// ByJob creates a Job from a CronJob's jobTemplate, as
	// `kubectl create job --from=cronjob/NAME` does.
	ByJob Way = "create-job"
	// ByRecreate deletes a Job and creates it again (a Job's pod template
	// cannot change), as Reloader does.
	ByRecreate Way = "recreate-job"
	// ByEviction evicts the pods through the Eviction API, one at a time by
	// default, honouring PodDisruptionBudgets (reroll.dev/restart: evict,
	// --evict-owner); see internal/eviction.
	ByEviction Way = "evict"
	// NotRestarted restarts nothing, by design; only the record is written.
	NotRestarted Way = "none"
)

// Action is how one object rolls, decided from the object alone.
type Action struct {
	// Way is how it rolls.
	Way Way
	// Ref names the Deployment of ByWorkloadRef, in the object's namespace.
	Ref string
	// Why says, for NotRestarted, why nothing restarts (for the NotRolled
	// Event and `kubectl reroll why`).
	Why string
}

// Actor is a Kind whose objects do not all roll by their own pod template's
// trigger. Action decides how obj rolls from obj alone, with no API call.
// reloaderDefaults is true when obj opted in with Stakater Reloader's
// annotations (or --auto-reload-all): where Reroll's default differs from
// Reloader's, the kind then defaults to Reloader's behaviour, unless a flag
// or obj's annotation says otherwise (CronJobMode, RecreateFinished).
type Actor interface {
	Action(obj client.Object, reloaderDefaults bool) Action
}

// ActionOf returns how obj, of kind k, rolls: the kind's Actor decides, and
// every other kind rolls ByTemplate.
//
// Whatever the kind's way of changing pods, an object annotated
// reroll.dev/restart: evict restarts ByEviction, and an object whose
// template change another field manager put back
// (reroll.dev/reverted) is NotRestarted until that annotation is removed.
// Kinds that create Jobs keep their way.
func ActionOf(k Kind, obj client.Object, reloaderDefaults bool) Action {
	a := Action{Way: ByTemplate}
	if ac, ok := k.(Actor); ok {
		a = ac.Action(obj, reloaderDefaults)
	}
	switch a.Way {
	case ByTemplate, ByWorkloadRef, ByRestartAt:
		if obj.GetAnnotations()[eviction.RestartAnnotation] == eviction.RestartEvict || OnDelete(obj) {
			// An OnDelete StatefulSet or DaemonSet ignores a new template
			// until its pods are deleted: Reroll restarts them itself.
			return Action{Way: ByEviction}
		}
		if v, ok := obj.GetAnnotations()[revert.RevertedAnnotation]; ok && a.Way == ByTemplate {
			return Action{Way: NotRestarted, Why: revert.Why(v)}
		}
	}
	return a
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

// OnDelete reports whether obj is a StatefulSet or DaemonSet with
// spec.updateStrategy.type OnDelete, whose controller replaces a pod with
// the new template only once the pod is deleted.
func OnDelete(obj client.Object) bool {
	switch o := compact.Expand(obj).(type) {
	case *appsv1.StatefulSet:
		return o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	case *appsv1.DaemonSet:
		return o.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	}
	return false
}
