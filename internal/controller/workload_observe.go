package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/source"
	"github.com/reroll/reroll/internal/workload"
)

// observe gathers what plan.Decide needs of obj, the first step of a
// reconcile; it only reads (the cache, Reroll's memory, the baseline kept
// in Reroll's namespace). The options are the planner's, with DeferRecord
// as this reconciler applies it. The reads that only some decisions need
// are left to the View (view). burstEnded is coalesce.Admission.Ended.
// An error wrapping workload.ErrShape means obj's shape does not match its
// kind's template path.
func (r *WorkloadReconciler) observe(ctx context.Context, obj client.Object, burstEnded bool) (plan.Input, plan.Options, error) {
	opts := r.planOptions()
	template, err := workload.ReadPodTemplate(ctx, r.Client, r.Kind, obj)
	if err != nil {
		return plan.Input{}, opts, err
	}
	in := plan.NewInput(r.Kind, obj, template, r.now())
	// Versioned config: which references name copies, and of what.
	if in.Pins, err = plan.PinsOf(r.sources(ctx), opts.Key, obj.GetNamespace(), in.Template); err != nil {
		return plan.Input{}, opts, err
	}
	in.Since.ResourceVersion = r.creations.Since(obj, in.Since.At)
	opts.DeferRecord = r.defersRecord()
	if opts.DeferRecord && obj.GetAnnotations()[plan.RecordAnnotation] == "" {
		if in.Baseline, err = r.baselineOf(ctx, obj); err != nil {
			return plan.Input{}, opts, err
		}
	}
	if in.NamespaceAnnotations, err = r.namespaceAnnotations(ctx, obj.GetNamespace()); err != nil {
		return plan.Input{}, opts, err
	}
	in.LegacyRecordsUntil = r.Options.LegacyRecordsUntil
	in.Coalesce = plan.Coalescing{
		Held:       !burstEnded && r.coalesce.Holds(ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}),
		BurstEnded: burstEnded,
		Window:     r.Options.CoalesceWindow,
		MaxWait:    r.coalescing().MaxWait,
	}
	if _, ok := r.progressKind(); ok && r.changeSets != nil {
		in.Delivery = &plan.DeliveryInput{Options: safe.Options{Window: r.Options.ChangeSetWindow, BakeTime: r.Options.BakeTime,
			HaltAfter: r.Options.HaltAfterFailedRollouts, Recheck: r.Options.Recheck}}
	}
	in.Storm = r.Options.Storm
	in.Validate = r.validation != nil
	mode, problems := workload.RestartMode(r.Kind, obj)
	in.Restart = &plan.RestartInput{Mode: mode, Problems: problems, Desired: workload.DesiredPods(obj),
		HighestOrdinalFirst: workload.HighestOrdinalFirst(obj), TemplateInObject: workload.TemplateInObject(r.Kind, obj)}
	return in, opts, nil
}

// view is the plan.View of obj, decided at now: the store and the cache,
// Reroll's memory, and the API server for what the cache cannot tell.
func (r *WorkloadReconciler) view(ctx context.Context, obj client.Object, now time.Time) plan.View {
	return workloadView{keyedSource: r.sources(ctx), r: r, obj: obj, now: now}
}

// sources is the plan.KeyedSource of the store: the ConfigMaps and
// Secrets it holds, under the current key or an older one.
func (r *WorkloadReconciler) sources(ctx context.Context) keyedSource {
	return keyedSource{Cache: source.Cache{Ctx: ctx, Reader: r.Client, Store: r.Options.Store}, r: r}
}

// decide is plan.DecideRecord from the store: what a change does to the
// workload in (the annotated pods' group), without the rest of
// plan.Decide.
func (r *WorkloadReconciler) decide(ctx context.Context, opts plan.Options, in plan.Input) (plan.Plan, error) {
	return plan.DecideRecord(opts, in, r.sources(ctx))
}

// keyedSource implements plan.KeyedSource.
type keyedSource struct {
	source.Cache
	r *WorkloadReconciler
}

// Older implements plan.KeyedSource: the ConfigMaps and Secrets the store
// holds, read again from the API server and digested under k
// (source.Legacy).
func (s keyedSource) Older(k digest.Key) plan.Source {
	return source.Legacy{Cache: s.Cache, Reader: s.r.APIReader, Key: k, Memo: &s.r.legacyDigests}
}

// workloadView implements plan.View for one workload.
type workloadView struct {
	keyedSource
	r   *WorkloadReconciler
	obj client.Object
	now time.Time
}

// HeldSince implements plan.View, from the first-sight memory.
func (v workloadView) HeldSince(changed time.Time) time.Time {
	return v.r.creations.HeldSince(v.obj.GetUID(), changed)
}

// Notification implements plan.View, from the notifications on their way.
func (v workloadView) Notification(key string) (plan.NotifyState, error) {
	return v.r.notifications.state(client.ObjectKeyFromObject(v.obj), key)
}

// Pods implements plan.View: the workload's pods from the cache (podsOf).
func (v workloadView) Pods() ([]eviction.Pod, error) {
	pods, err := v.r.podsOf(v.Ctx, v.obj)
	if err != nil {
		return nil, err
	}
	out := make([]eviction.Pod, 0, len(pods))
	for i := range pods {
		out = append(out, eviction.FromPod(&pods[i]))
	}
	return out, nil
}

// Current implements plan.View: a conflict error, which makes Reconcile
// re-read the workload from the API server, when the workload read is
// older than the stored version.
func (v workloadView) Current() error {
	cur := v.r.Kind.New()
	if err := v.r.APIReader.Get(v.Ctx, client.ObjectKeyFromObject(v.obj), cur); err != nil {
		return err
	}
	if cur.GetResourceVersion() != v.obj.GetResourceVersion() {
		return apierrors.NewConflict(schema.GroupResource{Resource: workload.Plural(v.r.Kind)}, v.obj.GetName(), errors.New("the cached workload is behind the API server"))
	}
	return nil
}

// Latest implements plan.View: the workload read from the API server
// (managedFields are not cached).
func (v workloadView) Latest() (map[string]string, []metav1.ManagedFieldsEntry, error) {
	fresh := v.r.Kind.New()
	if err := v.r.APIReader.Get(v.Ctx, client.ObjectKeyFromObject(v.obj), fresh); err != nil {
		return nil, nil, fmt.Errorf("reading the field managers of %s %s/%s: %w", v.r.Kind.Name(), v.obj.GetNamespace(), v.obj.GetName(), err)
	}
	return fresh.GetAnnotations(), fresh.GetManagedFields(), nil
}

// Order implements plan.View, from the cache (changeSets.waves).
func (v workloadView) Order() (safe.Order, error) {
	return v.r.changeSets.waves(v.Ctx, v.now)
}

// Halts implements plan.View: the halt records from their watch, with the
// halts held from memory; those are written again, at most every
// unrecordedRetry, so that a halt the API refused once is recorded as soon
// as it can be (changeSets.halts).
func (v workloadView) Halts() (map[string]*safe.Halt, error) {
	return v.r.changeSets.halts(v.Ctx, true)
}

// Member implements plan.View.
func (v workloadView) Member(rec safe.Record) (safe.Member, error) {
	pk, _ := v.r.progressKind()
	return v.r.member(v.Ctx, pk, v.obj, rec)
}

// Members implements plan.View, from the cache.
func (v workloadView) Members(id string) ([]safe.Member, error) {
	return v.r.members(v.Ctx, id, v.obj.GetUID())
}

// WaveHash implements plan.View: read from the API server (source.WaveHash).
func (v workloadView) WaveHash(namespace string, refs []reference.Reference) (string, error) {
	return source.WaveHash(v.Ctx, v.r.APIReader, v.r.Options.Scope, namespace, refs)
}
