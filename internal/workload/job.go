package workload

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Job is the batch/v1 Job. A Job's pod template cannot change, so, as
// Reloader does, Reroll deletes the Job (background propagation) and creates
// it again from its spec. Jobs owned by a CronJob are left to the CronJob.
type Job struct {
	// RecreateCompleted is --recreate-completed-jobs when given: whether
	// Jobs that have completed or failed are re-created too. nil lets the
	// dialect decide (RecreateFinished).
	RecreateCompleted *bool
}

// RecreateCompletedAnnotation on a Job, "true" or "false", says whether the
// Job is re-created after it has finished; it overrides
// --recreate-completed-jobs.
const RecreateCompletedAnnotation = "reroll.dev/recreate-completed"

// RecreateFinished decides whether a finished Job is re-created when data it
// consumes changes: the Job's RecreateCompletedAnnotation when it is a
// boolean, else flag (--recreate-completed-jobs) when given, else true for a
// Job opted in with Reloader's annotations (Reloader re-creates a Job whether
// or not it has finished) and false for the others. why says which of these
// decided, for the Event.
func RecreateFinished(flag *bool, reloaderDefaults bool, annotations map[string]string) (recreate bool, why string) {
	if v, err := strconv.ParseBool(strings.TrimSpace(annotations[RecreateCompletedAnnotation])); err == nil {
		return v, "annotation " + RecreateCompletedAnnotation
	}
	if flag != nil {
		return *flag, "--recreate-completed-jobs"
	}
	if reloaderDefaults {
		return true, "Reloader's annotations"
	}
	return false, "default for reroll.dev annotations"
}

// Labels the Job controller adds, which a new Job must not carry.
var jobControllerLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;patch;create;delete

// Name implements Kind.
func (Job) Name() string { return "Job" }

// New implements Kind.
func (Job) New() client.Object { return &batchv1.Job{} }

// NewList implements Kind.
func (Job) NewList() client.ObjectList { return &batchv1.JobList{} }

// PodTemplate implements Kind; the result points into obj.
func (Job) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	return &obj.(*batchv1.Job).Spec.Template, nil
}

// SetPodTemplate implements Kind.
func (Job) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	obj.(*batchv1.Job).Spec.Template = *t
	return nil
}

// Handles implements Filter: Jobs owned by a CronJob are not Reroll's.
func (Job) Handles(obj client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "CronJob" {
			return false
		}
	}
	return true
}

// Roll implements Roller. It deletes the Job, with a precondition on its UID
// so that a Job someone else re-created is never deleted, and creates it
// again from r.Desired without the selector and labels the Job controller
// generated (a manualSelector Job keeps its own selector and labels); the
// new Job carries Reroll's record. A completed Job is only
// recorded: Action decides that (RecreateFinished), and Roll runs only for
// ByRecreate.
func (k Job) Roll(ctx context.Context, c client.Client, r Rollout) (RollResult, error) {
	old := r.Original.(*batchv1.Job)
	desired := r.Desired.(*batchv1.Job)
	fresh := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        desired.Name,
			Namespace:   desired.Namespace,
			Labels:      withoutKeys(desired.Labels, jobControllerLabels),
			Annotations: desired.Annotations,
		},
		Spec: *desired.Spec.DeepCopy(),
	}
	if fresh.Spec.ManualSelector == nil || !*fresh.Spec.ManualSelector {
		// The Job controller generated the selector and its labels from the
		// old Job's UID; the API server generates them again.
		fresh.Spec.Selector = nil
		fresh.Spec.Template.Labels = withoutKeys(fresh.Spec.Template.Labels, jobControllerLabels)
	}
	// With manualSelector: true the selector is the user's and required: the
	// API server refuses a Job without one, and the old Job would be lost.
	uid := old.UID
	if r.Journal != nil {
		// Durable before the delete: from here on, a Job that is gone is
		// re-created from the journal by whoever reconciles it next.
		if err := r.Journal.Save(ctx, fresh, uid); err != nil {
			return RollResult{Handled: true}, fmt.Errorf("journaling Job %s/%s before re-creating it: %w", old.Namespace, old.Name, err)
		}
	}
	err := c.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return RollResult{Handled: true}, fmt.Errorf("deleting Job %s/%s to re-create it: %w", old.Namespace, old.Name, err)
	}
	// The old Job may take a moment to go; creating it again answers
	// AlreadyExists until then.
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Steps: 20, Cap: 2 * time.Second}
	err = retry.OnError(backoff, apierrors.IsAlreadyExists, func() error {
		return c.Create(ctx, fresh.DeepCopy())
	})
	if err != nil {
		return RollResult{Handled: true}, fmt.Errorf("re-creating deleted Job %s/%s: %w", fresh.Namespace, fresh.Name, err)
	}
	if r.Journal != nil {
		if err := r.Journal.Done(ctx, fresh.Namespace, fresh.Name); err != nil {
			// The Job exists: a later recovery finds it and only drops the
			// entry.
			return RollResult{Handled: true, Rolled: true, Note: "deleted and re-created the Job"}, fmt.Errorf("clearing the journal of Job %s/%s: %w", fresh.Namespace, fresh.Name, err)
		}
	}
	return RollResult{Handled: true, Rolled: true, Note: "deleted and re-created the Job"}, nil
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func withoutKeys(in map[string]string, keys []string) map[string]string {
	out := maps.Clone(in)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// Action implements Actor: a Job rolls ByRecreate, unless it has finished
// and RecreateFinished says no; then it is only recorded.
func (k Job) Action(obj client.Object, reloaderDefaults bool) Action {
	if recreate, why := RecreateFinished(k.RecreateCompleted, reloaderDefaults, obj.GetAnnotations()); finished(obj.(*batchv1.Job)) && !recreate {
		return Action{Way: NotRestarted, Why: fmt.Sprintf("not re-created: the Job has finished (%s; %s: \"true\" or --recreate-completed-jobs re-creates finished Jobs)", why, RecreateCompletedAnnotation)}
	}
	return Action{Way: ByRecreate}
}
