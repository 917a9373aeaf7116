package scope

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
)

// Transform is the cache transform of workloads: plan.SummarizeWrites
// (one managedFields entry instead of all) before k's transform, which
// drops managedFields; every other object only goes through k's.
//
// Deployments, StatefulSets and DaemonSets, which Reroll writes only by
// strategic merge patches between two cached copies (workload.Patch: a
// field that neither copy holds is not in the patch, and the API server
// keeps it), are trimmed to what Reroll reads of them:
//
//   - the pod template to what envtrim.Keep keeps (annotations; each
//     container's name, env with long values as digests, envFrom and
//     volumeMounts; volumes; imagePullSecrets), after revert.Sums of the
//     full template are computed and held on the copy (revert.Hold, an
//     entry of managedFields that no write sends), so that revert
//     detection and the automatic undo still compare full templates;
//   - the spec and status outside the template to what trimDeployment,
//     trimStatefulSet and trimDaemonSet keep (their docs say which reader
//     needs each field);
//   - the metadata whole (names, UID, generation, resourceVersion, labels,
//     annotations, owner references), managedFields summarized as for the
//     other kinds.
//
// Jobs and CronJobs (re-created, or copied into a Job, whole) and custom
// kinds (JSON merge patches replace lists whole) keep their templates.
//
// The three trimmed kinds are then held in compact form
// (compact.Workload: the metadata as it is, the spec and status as their
// protobuf encoding), which decodes to the trimmed typed object whenever
// the cache copies it: a Get or List returns that object as before.
//
// The transform is idempotent: informers may apply it twice to an object
// (a template already trimmed keeps the Sums held with it; a
// compact.Workload passes through). It takes the compact Workloads from
// blocks (compact.Blocks.From; nil: each allocated by itself).
func Transform(k digest.Key, blocks *compact.Blocks) toolscache.TransformFunc {
	trim := trimTransform(k)
	return func(obj any) (any, error) {
		if w, ok := obj.(*compact.Workload); ok {
			return w, nil
		}
		out, err := trim(obj)
		if err != nil {
			return out, err
		}
		if w, ok := blocks.From(out); ok {
			return w, nil
		}
		return out, nil
	}
}

// trimTransform is Transform without the compact form: the trimmed typed
// objects.
func trimTransform(k digest.Key) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		var sums *revert.Sums
		trim := func(m metav1.Object, t *corev1.PodTemplateSpec) {
			s := revert.Held(m, t)
			sums = &s
			envtrim.Keep(t)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			trim(o, &o.Spec.Template)
			trimDeployment(o)
		case *appsv1.StatefulSet:
			trim(o, &o.Spec.Template)
			trimStatefulSet(o)
		case *appsv1.DaemonSet:
			trim(o, &o.Spec.Template)
			trimDaemonSet(o)
		}
		var m metav1.Object
		switch o := obj.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job, *batchv1.CronJob, *unstructured.Unstructured:
			m = o.(metav1.Object)
		default:
			return k.Transform(obj)
		}
		written := false
		for _, e := range m.GetManagedFields() {
			written = written || e.Manager != revert.HeldManager
		}
		var summary []metav1.ManagedFieldsEntry
		if written {
			at := metav1.NewTime(plan.WrittenAt(m))
			summary = []metav1.ManagedFieldsEntry{{Manager: plan.SummaryManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}}
		}
		out, err := k.Transform(obj)
		m.SetManagedFields(summary)
		if sums != nil {
			revert.Hold(m, *sums)
		}
		return out, err
	}
}
