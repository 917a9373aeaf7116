package workload

import (
	"context"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CronJobTriggerAnnotation on a CronJob chooses what a change does:
// "none" (the next scheduled Job reads the new data anyway) or "job"
// (Reloader's behaviour: create a Job from the jobTemplate at once). It
// overrides --cronjob-trigger; see CronJobMode for the default.
const CronJobTriggerAnnotation = "reroll.dev/cronjob-trigger"

// CronJob triggers (--cronjob-trigger and CronJobTriggerAnnotation).
const (
	CronJobTriggerNone = "none"
	CronJobTriggerJob  = "job"
)

// CronJob is the batch/v1 CronJob. Its pod template is
// spec.jobTemplate.spec.template; it rolls by creating a Job, or not at all.
type CronJob struct {
	// Trigger is --cronjob-trigger: CronJobTriggerNone or CronJobTriggerJob
	// for every CronJob without CronJobTriggerAnnotation, or "" when the flag
	// was not given, to let the dialect decide (CronJobMode).
	Trigger string
}

// CronJobMode decides what a change consumed by a CronJob does: the
// CronJob's CronJobTriggerAnnotation when set, else flag (--cronjob-trigger)
// when given, else CronJobTriggerJob for a CronJob opted in with Reloader's
// annotations (Reloader creates a Job at once) and CronJobTriggerNone for the
// others. The result may be an unknown value taken from the annotation.
func CronJobMode(flag string, reloaderDefaults bool, annotations map[string]string) string {
	if v, ok := annotations[CronJobTriggerAnnotation]; ok {
		return v
	}
	if flag != "" {
		return flag
	}
	if reloaderDefaults {
		return CronJobTriggerJob
	}
	return CronJobTriggerNone
}

// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;patch

// Name implements Kind.
func (CronJob) Name() string { return "CronJob" }

// New implements Kind.
func (CronJob) New() client.Object { return &batchv1.CronJob{} }

// NewList implements Kind.
func (CronJob) NewList() client.ObjectList { return &batchv1.CronJobList{} }

// PodTemplate implements Kind; the result points into obj.
func (CronJob) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	return &obj.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template, nil
}

// SetPodTemplate implements Kind.
func (CronJob) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	obj.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template = *t
	return nil
}

// Action implements Actor. With the "job" trigger (CronJobMode) the CronJob
// rolls ByJob: a Job created from its jobTemplate (Reloader's behaviour);
// with "none" nothing restarts, since the next scheduled Job reads the new
// data anyway. Rolling never changes the CronJob's own template (versioned
// config pins its references, internal/plan).
func (k CronJob) Action(obj client.Object, reloaderDefaults bool) Action {
	mode := CronJobMode(k.Trigger, reloaderDefaults, obj.GetAnnotations())
	switch mode {
	case CronJobTriggerJob:
		return Action{Way: ByJob}
	case CronJobTriggerNone, "":
		return Action{Way: NotRestarted, Why: fmt.Sprintf("no Job created: the CronJob's next scheduled Job reads the new data (set %s: job to start one at once)", CronJobTriggerAnnotation)}
	default:
		return Action{Way: NotRestarted, Why: fmt.Sprintf("no Job created: annotation %s has unknown value %q (want none or job)", CronJobTriggerAnnotation, mode)}
	}
}

// CreateJob is the write step of ByJob: it creates Job name from the
// CronJob's jobTemplate, as `kubectl create job --from=cronjob/<name>` does
// (annotation cronjob.kubernetes.io/instantiate: manual, controller
// reference to the CronJob). A Job of that name that already exists counts
// as created, so a retry with the same name (JobName of the same data)
// creates no second Job.
func CreateJob(ctx context.Context, c client.Client, cj *batchv1.CronJob, name string) error {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cj.Namespace,
			Labels:      maps.Clone(cj.Spec.JobTemplate.Labels),
			Annotations: maps.Clone(cj.Spec.JobTemplate.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj,
				batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations["cronjob.kubernetes.io/instantiate"] = "manual"
	if err := c.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Job %s/%s from CronJob %s: %w", job.Namespace, job.Name, cj.Name, err)
	}
	return nil
}

// JobName is the name of the Job created from a CronJob for the data of
// hash (lowercase hex): "<cronjob>-reroll-<first 8 of hash>", the CronJob's
// name cut so that the whole fits the 63 characters a Job name may have.
func JobName(cronJob, hash string) string {
	const suffixLen = len("-reroll-") + 8
	if len(cronJob) > 63-suffixLen {
		cronJob = cronJob[:63-suffixLen]
	}
	if len(hash) > 8 {
		hash = hash[:8]
	}
	return cronJob + "-reroll-" + hash
}
