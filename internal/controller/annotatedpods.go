package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/go-logr/logr"

	"github.com/reroll/reroll/internal/apply"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/observe"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// annotatedPods restarts by eviction the pods that opt in with their own
// annotations (parsed with Options.Annotations, as a workload's) and whose
// controller is a kind Reroll neither handles nor re-templates, such as an
// operator's custom resource it was not told about with --evict-owner
// (Reloader issue #250). The pods of one controller form a group; a pod
// with no controller is a group of its own, whose pod is never evicted
// (ReasonNotEvicted).
//
// Reroll may neither patch such pods nor read their owner, so the record
// of a group (the annotations a workload would carry: what it consumes and
// the restart by eviction under way, eviction.ProgressAnnotation) lives in
// state.Entries in Reroll's own namespace (Options.PodRecords is their
// prefix), one signed entry per group keyed by its namespace and
// controller UID (the pod's own UID for a bare pod), whose value is the
// JSON object of those annotations: one ConfigMap per group, so one
// tenant's groups never fill another's, and a group's reconcile reads and
// writes its own record only.
// The request of a group is its namespace and, as name, that UID.
type annotatedPods struct {
	// w supplies the client, options, planner options and Event recorder.
	w *WorkloadReconciler
	// records is the ConfigMap of the records.
	records *state.Entries
	// sources read the ConfigMaps and Secrets the pods consume (the store).
	sources *observe.Deps
	// handled are the owner kinds Reroll restarts some other way.
	handled map[schema.GroupKind]bool
}

// podsAnnotation is the key, in a group's record, of how many pods the
// group ran when no restart was under way (decimal).
const podsAnnotation = "reroll.dev/pods"

// setupAnnotatedPods registers the controller of annotated pods with mgr;
// kinds are the workload kinds Reroll handles, whose pods it leaves alone.
func setupAnnotatedPods(mgr ctrl.Manager, opts Options, kinds []workload.Kind) error {
	a := &annotatedPods{
		w: &WorkloadReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts,
			Recorder: boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
		},
		sources: &observe.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: opts.Store},
		records: state.NewEntries(mgr.GetClient(), mgr.GetAPIReader(), opts.PodRecords, opts.Key, "the pod records"),
		handled: workload.PodControllers(kinds),
	}
	dataChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := digest.Of(e.ObjectOld)
		after, ok2 := digest.Of(e.ObjectNew)
		return !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys)
	}}
	b := ctrl.NewControllerManagedBy(mgr).Named("annotated-pods").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(a.requestsForPod), builder.WithPredicates(podChanged())).
		WithOptions(opts.controllerOptions(mgr.GetLogger()))
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
		if !opts.Store.Watches(kind) {
			continue
		}
		src, err := opts.Store.Source(kind, handler.EnqueueRequestsFromMapFunc(a.requestsInNamespace), dataChanged)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	if err := b.Complete(a); err != nil {
		return fmt.Errorf("creating the annotated pods controller: %w", err)
	}
	return nil
}

// group returns the UID of the group of pod: its controller's, or its own
// when it has none; "" when its controller is a kind Reroll handles.
func (a *annotatedPods) group(pod client.Object) types.UID {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return pod.GetUID()
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || a.handled[gv.WithKind(ref.Kind).GroupKind()] {
		return ""
	}
	return ref.UID
}

// optedIn reports whether pod's own annotations opt in.
func (a *annotatedPods) optedIn(pod client.Object) bool {
	o, _ := a.w.Options.Annotations.Parse(pod.GetAnnotations(), nil)
	return o.Enabled()
}

// requestsForPod maps a pod event to its group, when the pod opts in.
func (a *annotatedPods) requestsForPod(_ context.Context, pod client.Object) []reconcile.Request {
	if g := a.group(pod); g != "" && a.optedIn(pod) {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: string(g)}}}
	}
	return nil
}

// requestsInNamespace maps a ConfigMap or Secret event to every group of
// annotated pods in its namespace (a scan of the cached pods there; the
// group's reconcile tells whether it reads the object).
func (a *annotatedPods) requestsInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list corev1.PodList
	if err := a.w.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing pods", "namespace", obj.GetNamespace())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, r := range a.requestsForPod(ctx, &list.Items[i]) {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// record reads a group's record: nil when there is none.
func (a *annotatedPods) record(ctx context.Context, req types.NamespacedName) (map[string]string, error) {
	v, ok, err := a.records.Get(ctx, req)
	if err != nil || !ok {
		return nil, err
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		// A damaged record starts again from first sight.
		ctrl.LoggerFrom(ctx).Info("Dropping unreadable pod record", "group", req.String(), "error", err.Error())
		return nil, nil
	}
	return out, nil
}

// write stores a group's record; an empty one removes it.
func (a *annotatedPods) write(ctx context.Context, req types.NamespacedName, rec map[string]string) error {
	var v string
	if len(rec) > 0 {
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encoding the pod record: %w", err)
		}
		v = string(b)
	}
	return a.records.Put(ctx, req, v)
}

// Reconcile plans the group of annotated pods req names as it would a
// workload restarted by eviction (first sight records, a change evicts the
// pods created before it, one at a time), with the record in the
// ConfigMap of records. Events go to the pods.
func (a *annotatedPods) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if in, err := a.w.Options.Scope.Includes(ctx, a.w.Client, req.Namespace); err != nil || !in {
		return ctrl.Result{}, err
	}
	pods, err := a.podsOf(ctx, req)
	if err != nil {
		return ctrl.Result{}, err
	}
	rec, err := a.record(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(pods) == 0 {
		if rec == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, a.write(ctx, req.NamespacedName, nil)
	}
	kind, obj := groupAsWorkload(req, pods, rec)
	log := ctrl.LoggerFrom(ctx).WithValues("owner", kind.GVK.Kind+"/"+obj.GetName())
	template := workload.TemplateOfPods(pods)
	now := a.w.now()
	opts := a.w.Options.PlanOptions
	// Records of annotated pods are always written (in the pod records):
	// there is no workload to spare a write of.
	opts.DeferRecord = false
	p, err := plan.DecideRecord(opts, plan.NewInput(kind, obj, template, now), observe.Sources(ctx, a.sources))
	if err != nil {
		return ctrl.Result{}, err
	}
	next := maps.Clone(rec)
	if next == nil {
		next = map[string]string{}
	}
	for k, v := range p.Annotations {
		next = workload.WithKey(next, k, v)
	}
	switch p.Outcome {
	case plan.NotOptedIn:
		if rec == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, a.write(ctx, req.NamespacedName, nil)
	case plan.Deleting, plan.Waiting, plan.Refused:
		return ctrl.Result{}, nil
	}
	d := decideEviction(log, p, template, pods, rec, next, now)
	next = workload.WithKey(next, eviction.ProgressAnnotation, d.Progress.String())
	// The record first: a kill after the evictions below finds the evicted
	// pods terminating or gone and never evicts them again. An unchanged
	// record is not written again.
	if !maps.Equal(next, rec) {
		if err := a.write(ctx, req.NamespacedName, next); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch p.Outcome {
	case plan.FirstSight:
		log.Info("Recorded consumed data of annotated pods on first sight", "pods", len(pods))
	case plan.Roll:
		log.Info(AuditEvictingPods, "changes", p.Change.Summary(), "pods", d.Started)
	}
	return a.evict(ctx, req.NamespacedName, pods, d, p.Change.Summary(), next, now)
}

// podsOf returns the pods of the group req names that opt in.
func (a *annotatedPods) podsOf(ctx context.Context, req ctrl.Request) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := a.w.Client.List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", req.Namespace, err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if string(a.group(&p)) == req.Name && a.optedIn(&p) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// groupAsWorkload returns the group of pods as a workload: its
// controller's kind and name (the pod's own for a bare pod), the group's
// UID, the record rec as its annotations.
func groupAsWorkload(req ctrl.Request, pods []corev1.Pod, rec map[string]string) (workload.PodOwner, client.Object) {
	kind := workload.PodOwner{GVK: corev1.SchemeGroupVersion.WithKind("Pod")}
	name := pods[0].Name
	if ref := metav1.GetControllerOf(&pods[0]); ref != nil {
		kind.GVK = schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		name = ref.Name
	}
	obj := kind.New()
	obj.SetNamespace(req.Namespace)
	obj.SetName(name)
	obj.SetUID(types.UID(req.Name))
	obj.SetAnnotations(maps.Clone(rec))
	return kind, obj
}

// decideEviction decides the restart by eviction of the group's pods after
// p, from the progress in rec; it records in next, the record to write,
// how many pods the group runs outside a restart.
func decideEviction(log logr.Logger, p plan.Plan, template *corev1.PodTemplateSpec, pods []corev1.Pod, rec, next map[string]string, now time.Time) eviction.Decision {
	mode, problems := eviction.ParseMode(template.Annotations, 0)
	if len(problems) > 0 {
		log.Info("Ignoring malformed annotations", "error", errors.Join(problems...).Error())
	}
	progress, err := eviction.ParseProgress(rec[eviction.ProgressAnnotation])
	if err != nil {
		log.Info("Dropping unreadable eviction record", "error", err.Error())
	}
	var change *eviction.Change
	if p.Outcome == plan.Roll && p.Roll.Way == workload.ByEviction {
		change = &eviction.Change{Hash: p.Record.ConfigHash(), At: now}
	}
	in := eviction.Input{Progress: progress, Change: change, MaxUnavailable: mode.MaxUnavailable}
	running := 0
	for i := range pods {
		in.Pods = append(in.Pods, eviction.FromPod(&pods[i]))
		if pods[i].DeletionTimestamp == nil {
			running++
		}
	}
	// The group has no spec.replicas: the pods it runs outside a restart
	// are recorded, and a restart waits for as many to be Ready.
	if progress == nil {
		next[podsAnnotation] = strconv.Itoa(running)
	}
	in.Desired, _ = strconv.Atoi(next[podsAnnotation])
	return eviction.Decide(in)
}

// evict carries out d for the group's pods and writes the record without
// the pods it evicted; it reports on the pods.
func (a *annotatedPods) evict(ctx context.Context, req types.NamespacedName, pods []corev1.Pod, d eviction.Decision, changes string, rec map[string]string, now time.Time) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	for _, name := range d.Bare {
		log.Info("Not evicting pod without owner", "pod", name)
		a.w.Recorder.Eventf(byName[name], corev1.EventTypeWarning, ReasonNotEvicted, "Not evicting pod %s: it has no owner that would re-create it; restart it by hand to read the new data", name)
	}
	if d.Started > 0 {
		for _, ref := range d.Progress.Pending {
			if pod := byName[ref.Name]; pod != nil {
				a.w.Recorder.Eventf(pod, corev1.EventTypeNormal, ReasonEvicting, "Evicting %d pods after %s", d.Started, changes)
			}
		}
	}
	if d.Done {
		log.Info("Restarted annotated pods by eviction")
		for i := range pods {
			a.w.Recorder.Event(&pods[i], corev1.EventTypeNormal, ReasonEvicted, "Evicted every pod that read the old data; the replacements are Ready")
		}
	}
	if d.Progress == nil {
		return ctrl.Result{}, nil
	}
	progress, requeue, failure := apply.EvictPods(ctx, a.w.Client, a.w.Recorder, "Pod", req.Namespace, d, now, func(name string) runtime.Object {
		if pod := byName[name]; pod != nil {
			return pod
		}
		return nil
	})
	result := ctrl.Result{RequeueAfter: requeue}
	if err := a.write(ctx, req, workload.WithKey(rec, eviction.ProgressAnnotation, progress.String())); err != nil {
		return ctrl.Result{}, err
	}
	if failure != nil {
		return ctrl.Result{}, failure
	}
	if result.RequeueAfter == 0 {
		result.RequeueAfter = apply.RestartUnderWay
	}
	return result, nil
}
