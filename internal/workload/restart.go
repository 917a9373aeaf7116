package workload

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/eviction"
)

// RestartMode returns how obj, of kind k, restarts its pods: by eviction
// for a --evict-owner kind (PodOwner), an OnDelete StatefulSet or
// DaemonSet (which ignores a new template) and a workload annotated
// reroll.dev/restart: evict; by its pod template otherwise. Kinds whose
// rollout is not a pod restart (CronJob, Job) always use their own way.
// The errors name malformed annotations (eviction.ParseMode), whose
// defaults then apply.
func RestartMode(k Kind, obj client.Object) (eviction.Mode, []error) {
	switch k.(type) {
	case CronJob, Job:
		return eviction.Mode{MaxUnavailable: 1}, nil
	}
	m, problems := eviction.ParseMode(obj.GetAnnotations(), DesiredPods(obj))
	if _, ok := k.(PodOwner); ok || OnDelete(obj) {
		m.Evict = true
	}
	return m, problems
}

// HighestOrdinalFirst reports whether obj's pods are evicted from the
// highest ordinal down, as the StatefulSet controller's own rolling update
// replaces them.
func HighestOrdinalFirst(obj client.Object) bool {
	// The cache's compact form says its kind without a decode.
	if k := compact.KindOf(obj); k != "" {
		return k == StatefulSet{}.Name()
	}
	_, sts := obj.(*appsv1.StatefulSet)
	return sts
}

// TemplateInObject reports whether the pod template of obj, of kind k,
// lives in obj itself (not in the pods of a PodOwner, a CronJob's
// jobTemplate, a Job re-created whole, or an object a TemplateReader
// refers to): the only case in which Reroll can tell who put it back.
func TemplateInObject(k Kind, obj client.Object) bool {
	switch k.(type) {
	case PodOwner, CronJob, Job:
		return false
	}
	if tr, ok := k.(TemplateReader); ok {
		if _, elsewhere := tr.TemplateFrom(obj); elsewhere {
			return false
		}
	}
	return true
}

// JobTemplate reports whether the pod template of kind k is a CronJob's
// jobTemplate: no pod restarts when it changes, the Jobs the CronJob
// starts from then on (and the Job Reroll creates, ByJob) run it.
// Versioned config pins it (internal/plan).
func JobTemplate(k Kind) bool {
	_, ok := k.(CronJob)
	return ok
}

// HistoryUnread reports whether Reroll's garbage collection of copies
// (internal/pingc) does not read the older revisions of kind k: it reads
// ReplicaSets (Deployments, Argo Rollouts), ControllerRevisions
// (StatefulSets, DaemonSets), Jobs (CronJobs) and pods, not an OpenShift
// DeploymentConfig's ReplicationControllers nor whatever a --workload
// kind keeps. Versioned config does not pin such a kind (internal/plan): a
// copy only an older revision names would be collected, and an undo to
// that revision would name a ConfigMap or Secret that is gone.
func HistoryUnread(k Kind) bool {
	switch k := k.(type) {
	case Deployment, StatefulSet, DaemonSet, CronJob, Job, PodOwner:
		return false
	case Unstructured:
		return !k.ArgoRollout
	}
	return true
}

// ReadPodTemplate returns the pod template obj, of kind k, runs its pods
// from: for a PodOwner, the one its pods show; for a TemplateReader (an
// Argo Rollout with spec.workloadRef), the one of the object it refers
// to, read through c; else obj's own.
func ReadPodTemplate(ctx context.Context, c client.Reader, k Kind, obj client.Object) (*corev1.PodTemplateSpec, error) {
	if o, ok := k.(PodOwner); ok {
		return o.ReadPodTemplate(ctx, c, obj)
	}
	if tr, ok := k.(TemplateReader); ok {
		return tr.ReadPodTemplate(ctx, c, obj)
	}
	return k.PodTemplate(obj)
}
