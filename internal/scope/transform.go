package scope

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
)

// Transform is the cache transform of workloads: plan.SummarizeWrites
// (one managedFields entry instead of all) before k's transform, which
// drops managedFields; every other object only goes through k's. The pod
// templates of Deployments, StatefulSets and DaemonSets, which Reroll
// writes only by strategic merge patches between two cached copies, keep
// long env values as a digest (envtrim.Values); Jobs and CronJobs
// (re-created, or copied into a Job, whole) and custom kinds (JSON merge
// patches replace lists whole) keep theirs. Outside the pod template,
// those three kinds keep only the spec and status fields that a reader of
// the cache uses (trimDeployment, trimStatefulSet, trimDaemonSet). The
// transform is idempotent: informers may apply it twice to an object.
func Transform(k digest.Key) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			envtrim.Values(&o.Spec.Template.Spec)
			trimDeployment(o)
		case *appsv1.StatefulSet:
			envtrim.Values(&o.Spec.Template.Spec)
			trimStatefulSet(o)
		case *appsv1.DaemonSet:
			envtrim.Values(&o.Spec.Template.Spec)
			trimDaemonSet(o)
		}
		var m metav1.Object
		switch o := obj.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job, *batchv1.CronJob, *unstructured.Unstructured:
			m = o.(metav1.Object)
		default:
			return k.Transform(obj)
		}
		if len(m.GetManagedFields()) == 0 {
			return k.Transform(obj)
		}
		at := metav1.NewTime(plan.WrittenAt(m))
		out, err := k.Transform(obj)
		m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: plan.SummaryManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}})
		return out, err
	}
}
