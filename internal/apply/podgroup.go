package apply

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/podgroup"
	"github.com/reroll/reroll/internal/workload"
)

// PodGroup is the writer of a group of annotated pods (internal/podgroup):
// the group's record, then the evictions, with their Events on the pods.
type PodGroup struct {
	// Client evicts the pods.
	Client client.Client
	// Recorder emits the Events on the pods.
	Recorder record.EventRecorder
	// Records are the groups' records.
	Records podgroup.Records
}

// Apply carries out plan gp of group req: nothing, the record removed, or
// the record written when it changed (first: a kill after the evictions
// below finds the evicted pods terminating or gone and never evicts them
// again), then the evictions and the record without the pods evicted. It
// returns the requeue of a restart under way and the error of the first
// write or eviction that failed.
func (w PodGroup) Apply(ctx context.Context, req ctrl.Request, gp podgroup.Plan) (ctrl.Result, error) {
	switch gp.Step {
	case podgroup.Nothing:
		return ctrl.Result{}, nil
	case podgroup.Clear:
		return ctrl.Result{}, w.Records.Put(ctx, req.NamespacedName, nil)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("owner", gp.Owner)
	// An unchanged record is not written again.
	if !maps.Equal(gp.Next, gp.Record) {
		if err := w.Records.Put(ctx, req.NamespacedName, gp.Next); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch gp.Outcome {
	case plan.FirstSight:
		log.Info("Recorded consumed data of annotated pods on first sight", "pods", len(gp.Pods))
	case plan.Roll:
		log.Info(AuditEvictingPods, "changes", gp.Changes, "pods", gp.Eviction.Started)
	}
	return w.evict(ctx, req.NamespacedName, gp.Pods, gp.Eviction, gp.Changes, gp.Next, gp.Now)
}

// evict carries out d for the group's pods and writes the record without
// the pods it evicted; it reports on the pods.
func (w PodGroup) evict(ctx context.Context, req types.NamespacedName, pods []corev1.Pod, d eviction.Decision, changes string, rec map[string]string, now time.Time) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	for _, name := range d.Bare {
		log.Info("Not evicting pod without owner", "pod", name)
		w.Recorder.Eventf(byName[name], corev1.EventTypeWarning, plan.ReasonNotEvicted, "Not evicting pod %s: it has no owner that would re-create it; restart it by hand to read the new data", name)
	}
	if d.Started > 0 {
		for _, ref := range d.Progress.Pending {
			if pod := byName[ref.Name]; pod != nil {
				w.Recorder.Eventf(pod, corev1.EventTypeNormal, plan.ReasonEvicting, "Evicting %d pods after %s", d.Started, changes)
			}
		}
	}
	if d.Done {
		log.Info("Restarted annotated pods by eviction")
		for i := range pods {
			w.Recorder.Event(&pods[i], corev1.EventTypeNormal, plan.ReasonEvicted, "Evicted every pod that read the old data; the replacements are Ready")
		}
	}
	if d.Progress == nil {
		return ctrl.Result{}, nil
	}
	progress, requeue, failure := EvictPods(ctx, w.Client, w.Recorder, "Pod", req.Namespace, d, now, func(name string) runtime.Object {
		if pod := byName[name]; pod != nil {
			return pod
		}
		return nil
	})
	result := ctrl.Result{RequeueAfter: requeue}
	if err := w.Records.Put(ctx, req, workload.WithKey(rec, eviction.ProgressAnnotation, progress.String())); err != nil {
		return ctrl.Result{}, err
	}
	if failure != nil {
		return ctrl.Result{}, failure
	}
	if result.RequeueAfter == 0 {
		result.RequeueAfter = RestartUnderWay
	}
	return result, nil
}
