package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// InstalledAtAnnotation is the annotation on the digest key Secret that
// holds Reroll's installation time (plan.InstalledAtAnnotation).
const InstalledAtAnnotation = plan.InstalledAtAnnotation

// LoadInstalledAt returns Reroll's installation time: InstalledAtAnnotation
// of the digest key Secret name. A Secret without it (provided by the user,
// or made by a Reroll before the first-sight rule) gets it now, by an update
// guarded by the Secret's resourceVersion, so that two replicas starting at
// once agree on the first write. It returns an error when the Secret cannot
// be read or written. c must read from the API server.
func LoadInstalledAt(ctx context.Context, c client.Client, name types.NamespacedName, now time.Time) (time.Time, error) {
	var at time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := c.Get(ctx, name, &s); err != nil {
			return err
		}
		if t, ok := plan.InstalledAt(s.Annotations); ok {
			at = t
			return nil
		}
		at = now.UTC().Truncate(time.Second)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[InstalledAtAnnotation] = at.Format(time.RFC3339)
		return c.Update(ctx, &s, client.FieldOwner(FieldManager))
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading or writing the installation time (annotation %s) of the digest key Secret %s: %w", InstalledAtAnnotation, name, err)
	}
	return at, nil
}

// creations remembers the revision at which a workload's creation was seen
// on the watch, until its first sight is recorded: it orders, within the
// API's one-second resolution, the workload's creation against the changes
// the store saw (plan.Input.Since). It is memory only: after a restart the
// rule orders by seconds, which can only add a rollout, never lose one.
type creations struct {
	mu    sync.Mutex
	byUID map[types.UID]uint64
}

func newCreations() *creations { return &creations{byUID: map[types.UID]uint64{}} }

// noted is a predicate that passes every event, and first notes each
// workload created while the informer watched (not those of its initial
// list) and forgets each deleted one. As a predicate it runs before the
// request is queued, so the first sight always finds the note.
func (c *creations) noted() predicate.Predicate {
	if c == nil {
		return predicate.Funcs{}
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if rv, err := strconv.ParseUint(e.Object.GetResourceVersion(), 10, 64); err == nil && !e.IsInInitialList {
				c.mu.Lock()
				c.byUID[e.Object.GetUID()] = rv
				c.mu.Unlock()
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			c.forget(e.Object.GetUID())
			return true
		},
	}
}

// since returns the revision of obj's creation when it was seen and
// nothing wrote obj's spec or opt-in in a later second (writtenAt is
// plan.WrittenAt), else 0.
func (c *creations) since(obj client.Object, writtenAt time.Time) uint64 {
	if c == nil || writtenAt.Unix() != obj.GetCreationTimestamp().Unix() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byUID[obj.GetUID()]
}

func (c *creations) forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.byUID, uid)
	c.mu.Unlock()
}

// history is the first-sight history of a stored object; its
// resourceVersion bounds the revision of both its creation and its latest
// data change.
func history(obj *digest.Object) plan.History {
	created, changed := obj.History()
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	h := plan.History{Created: plan.Happened{At: created, ResourceVersion: rv}}
	if !changed.IsZero() {
		h.Changed = plan.Happened{At: changed, ResourceVersion: rv}
	}
	return h
}

// Deleted implements plan.Deletions with the deletions the store saw.
func (s cacheSource) Deleted(kind reference.Kind, namespace, name string) (plan.Happened, bool) {
	if s.store == nil || (kind != reference.ConfigMap && kind != reference.Secret) {
		return plan.Happened{}, false
	}
	d, ok := s.store.Deleted(kind, namespace, name)
	if !ok {
		return plan.Happened{}, false
	}
	return plan.Happened{At: d.At, ResourceVersion: d.ResourceVersion}, true
}

// summarizeWrites is the cache transform of workloads: plan.SummarizeWrites
// (one managedFields entry instead of all) before k's transform, which
// drops managedFields; every other object only goes through k's. The pod
// templates of Deployments, StatefulSets and DaemonSets, which Reroll
// writes only by strategic merge patches between two cached copies, keep
// long env values as a digest (envtrim.Values); Jobs and CronJobs
// (re-created, or copied into a Job, whole) and custom kinds (JSON merge
// patches replace lists whole) keep theirs.
func summarizeWrites(k digest.Key) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			envtrim.Values(&o.Spec.Template.Spec)
		case *appsv1.StatefulSet:
			envtrim.Values(&o.Spec.Template.Spec)
		case *appsv1.DaemonSet:
			envtrim.Values(&o.Spec.Template.Spec)
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

// firstSightHold returns how long to hold back a rollout of the first-sight
// rule: until Options.CoalesceWindow has passed since the latest change it
// answers (counted from the end of that change's second, the API's
// resolution), so that the rest of the change's burst joins this one
// rollout, as the ConfigMap and Secret watches' debounce does for a
// recorded workload. 0 means now; never more than the window and a second.
func (r *WorkloadReconciler) firstSightHold(p plan.Plan, now time.Time) time.Duration {
	w := r.Options.CoalesceWindow
	if w <= 0 || p.FirstSightChanged.IsZero() || len(p.Changes) == 0 {
		return 0
	}
	return min(p.FirstSightChanged.Add(time.Second+w).Sub(now), time.Second+w)
}
