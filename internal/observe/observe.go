package observe

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/changeset"
	"github.com/reroll/reroll/internal/coalesce"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/firstsight"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/source"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/validator"
	"github.com/reroll/reroll/internal/workload"
)

// Deps are what observe reads through, for the workloads of one kind. The
// controller builds them once the kind's watches are set up; a nil field
// turns off what it serves (noted at each).
type Deps struct {
	// Client reads from the manager's cache: the workload's pod template
	// source, its pods, Namespaces (metadata), change sets' members.
	Client client.Client
	// APIReader reads from the API server directly, only for what the
	// cache cannot tell (View's Current, Latest, WaveHash, Older).
	APIReader client.Reader
	// Kind is the workload kind.
	Kind workload.Kind
	// Options are the planner's options; Workload returns them with
	// DeferRecord replaced by this Deps' DeferRecord.
	Options plan.Options
	// DeferRecord is whether the record stays off workloads not rolled
	// (plan.Options.DeferRecord as the controller applies it: only with
	// the first-sight memory, without the admission webhook and without
	// --reload-on-delete).
	DeferRecord bool
	// Store is the cache of ConfigMaps and Secrets (internal/store).
	Store *store.Store
	// Scope is what Reroll watches (the WaveHash reads stay in it).
	Scope scope.Scope
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Creations is the first-sight memory (creations seen on the watch,
	// baselines kept in memory); nil orders by seconds and keeps none.
	Creations *firstsight.Memory
	// Baselines are the baselines kept signed in Reroll's namespace
	// (state.Baselines); nil keeps none there.
	Baselines *state.Baselines
	// ReadNamespaces is true when Reroll may list and watch Namespaces;
	// false reads no Namespace annotations (nil).
	ReadNamespaces bool
	// Coalesce is the debounce of the kind's ConfigMap and Secret watches;
	// Coalescing its window and max-wait (coalesce.Options).
	Coalesce   *coalesce.Debouncer
	Coalescing coalesce.Options
	// Sets are safe delivery's change sets; nil when it is off.
	Sets *changeset.Sets
	// Delivery are safe delivery's options (window, bake time, breaker,
	// recheck), used with Sets for kinds that report progress.
	Delivery safe.Options
	// Storm is the storm breaker (--storm-max-rollouts, --storm-period).
	Storm safe.Storm
	// Validation checks new content against the Validators; nil when
	// validation is off.
	Validation *validator.Gate
	// Notifications tell where the notification of a change is (the
	// writer's apply.Notifications); used only with a notification
	// endpoint.
	Notifications Notifications
	// LegacyRecordsUntil is the legacy scheme's deadline
	// (plan.Input.LegacyRecordsUntil).
	LegacyRecordsUntil time.Time

	// legacyDigests keep the digests of objects under an older key, for
	// records made under it (source.Legacy); d is used by pointer.
	legacyDigests source.LegacyDigests
}

// Notifications tell where the notification of a change to a workload is.
type Notifications interface {
	// State returns the state of the notification of key for the workload
	// nn (plan.NotifyNone for any other key), and the error of a failed
	// POST.
	State(nn types.NamespacedName, key string) (plan.NotifyState, error)
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Workload gathers what plan.Decide needs of obj, the first step of a
// reconcile; it only reads (the cache, Reroll's memory, the baseline kept
// in Reroll's namespace). The options are the planner's, with DeferRecord
// as d applies it. The reads that only some decisions need are left to
// View. burstEnded is coalesce.Admission.Ended. An error wrapping
// workload.ErrShape means obj's shape does not match its kind's template
// path; other errors are those of the reads.
func Workload(ctx context.Context, d *Deps, obj client.Object, burstEnded bool) (plan.Input, plan.Options, error) {
	opts := d.Options
	template, err := workload.ReadPodTemplate(ctx, d.Client, d.Kind, obj)
	if err != nil {
		return plan.Input{}, opts, err
	}
	in := plan.NewInput(d.Kind, obj, template, d.now())
	// Versioned config: which references name copies, and of what.
	if in.Pins, err = plan.PinsOf(sources(ctx, d), opts.Key, obj.GetNamespace(), in.Template); err != nil {
		return plan.Input{}, opts, err
	}
	in.Since.ResourceVersion = d.Creations.Since(obj, in.Since.At)
	opts.DeferRecord = d.DeferRecord
	if opts.DeferRecord && obj.GetAnnotations()[plan.RecordAnnotation] == "" {
		if in.Baseline, err = d.baselineOf(ctx, obj); err != nil {
			return plan.Input{}, opts, err
		}
	}
	if in.NamespaceAnnotations, err = d.NamespaceAnnotations(ctx, obj.GetNamespace()); err != nil {
		return plan.Input{}, opts, err
	}
	in.LegacyRecordsUntil = d.LegacyRecordsUntil
	in.Coalesce = plan.Coalescing{
		Held:       !burstEnded && d.Coalesce.Holds(ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}),
		BurstEnded: burstEnded,
		Window:     d.Coalescing.Window,
		MaxWait:    d.Coalescing.MaxWait,
	}
	if _, ok := rollout.ProgressOf(d.Kind); ok && d.Sets != nil {
		in.Delivery = &plan.DeliveryInput{Options: d.Delivery}
	}
	in.Storm = d.Storm
	in.Validate = d.Validation != nil
	mode, problems := workload.RestartMode(d.Kind, obj)
	in.Restart = &plan.RestartInput{Mode: mode, Problems: problems, Desired: workload.DesiredPods(obj),
		HighestOrdinalFirst: workload.HighestOrdinalFirst(obj), TemplateInObject: workload.TemplateInObject(d.Kind, obj),
		JobTemplate: workload.JobTemplate(d.Kind), HistoryUnread: workload.HistoryUnread(d.Kind)}
	return in, opts, nil
}

// NamespaceAnnotations returns the annotations of namespace, read from the
// cache (metadata only), for the Namespace's rollout window and bound. It
// reads nothing when Reroll may not watch Namespaces (an install limited
// to Roles in its namespaces; see scope.CanWatchNamespaces) and returns
// nil when the Namespace is gone.
func (d *Deps) NamespaceAnnotations(ctx context.Context, namespace string) (map[string]string, error) {
	if !d.ReadNamespaces {
		return nil, nil
	}
	return scope.NamespaceAnnotations(ctx, d.Client, namespace)
}

// baselineOf returns the baseline of obj, a workload without a record: the
// one kept in memory, else the one kept signed in Reroll's namespace.
func (d *Deps) baselineOf(ctx context.Context, obj client.Object) (string, error) {
	if b := d.Creations.Baseline(obj.GetUID()); b != "" {
		return b, nil
	}
	return StoredBaseline(ctx, d.Baselines, d.Kind, obj)
}

// StoredBaseline returns the baseline of obj, of kind, kept signed in
// Reroll's namespace; "" when none or without baselines (nil).
func StoredBaseline(ctx context.Context, baselines *state.Baselines, kind workload.Kind, obj client.Object) (string, error) {
	if baselines == nil {
		return "", nil
	}
	rec, _, err := baselines.Get(ctx, obj.GetNamespace(), kind.Name(), obj.GetName(), obj.GetUID())
	return rec, err
}

// View is the plan.View of obj, decided at now: the store and the cache,
// Reroll's memory, and the API server for what the cache cannot tell.
func View(ctx context.Context, d *Deps, obj client.Object, now time.Time) plan.View {
	return workloadView{keyedSource: sources(ctx, d), d: d, obj: obj, now: now}
}

// Sources is the plan.KeyedSource of the store: the ConfigMaps and
// Secrets it holds, under the current key or an older one (read again from
// the API server).
func Sources(ctx context.Context, d *Deps) plan.KeyedSource {
	return sources(ctx, d)
}

func sources(ctx context.Context, d *Deps) keyedSource {
	return keyedSource{Cache: source.Cache{Ctx: ctx, Reader: d.Client, Store: d.Store}, d: d}
}

// keyedSource implements plan.KeyedSource.
type keyedSource struct {
	source.Cache
	d *Deps
}

// Older implements plan.KeyedSource: the ConfigMaps and Secrets the store
// holds, read again from the API server and digested under k
// (source.Legacy).
func (s keyedSource) Older(k digest.Key) plan.Source {
	return source.Legacy{Cache: s.Cache, Reader: s.d.APIReader, Key: k, Memo: &s.d.legacyDigests}
}

// workloadView implements plan.View for one workload.
type workloadView struct {
	keyedSource
	d   *Deps
	obj client.Object
	now time.Time
}

// HeldSince implements plan.View, from the first-sight memory.
func (v workloadView) HeldSince(changed time.Time) time.Time {
	return v.d.Creations.HeldSince(v.obj.GetUID(), changed)
}

// Notification implements plan.View, from the notifications on their way.
func (v workloadView) Notification(key string) (plan.NotifyState, error) {
	return v.d.Notifications.State(client.ObjectKeyFromObject(v.obj), key)
}

// Pods implements plan.View: the workload's pods from the cache (Pods).
func (v workloadView) Pods() ([]eviction.Pod, error) {
	pods, err := Pods(v.Ctx, v.d.Client, v.d.Kind, v.obj)
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
	cur := v.d.Kind.New()
	if err := v.d.APIReader.Get(v.Ctx, client.ObjectKeyFromObject(v.obj), cur); err != nil {
		return err
	}
	if cur.GetResourceVersion() != v.obj.GetResourceVersion() {
		return apierrors.NewConflict(schema.GroupResource{Resource: workload.Plural(v.d.Kind)}, v.obj.GetName(), errors.New("the cached workload is behind the API server"))
	}
	return nil
}

// Latest implements plan.View: the workload read from the API server
// (managedFields are not cached).
func (v workloadView) Latest() (map[string]string, []metav1.ManagedFieldsEntry, error) {
	fresh := v.d.Kind.New()
	if err := v.d.APIReader.Get(v.Ctx, client.ObjectKeyFromObject(v.obj), fresh); err != nil {
		return nil, nil, fmt.Errorf("reading the field managers of %s %s/%s: %w", v.d.Kind.Name(), v.obj.GetNamespace(), v.obj.GetName(), err)
	}
	return fresh.GetAnnotations(), fresh.GetManagedFields(), nil
}

// Order implements plan.View, from the cache (changeset.Sets.Waves).
func (v workloadView) Order() (safe.Order, error) {
	return v.d.Sets.Waves(v.Ctx, v.now)
}

// Halts implements plan.View: the halt records from their watch, with the
// halts held from memory (changeset.Sets.Halts). It writes nothing: the
// record of a halt held from memory is written again by the write step
// (apply.Applier.Apply, changeset.Sets.RecordHeld).
func (v workloadView) Halts() (map[string]*safe.Halt, error) {
	return v.d.Sets.Halts(v.Ctx)
}

// Member implements plan.View.
func (v workloadView) Member(rec safe.Record) (safe.Member, error) {
	pk, _ := rollout.ProgressOf(v.d.Kind)
	return v.d.Sets.Member(v.Ctx, rollout.Kind{Kind: v.d.Kind, Progress: pk}, v.obj, rec)
}

// Members implements plan.View, from the cache.
func (v workloadView) Members(id string) ([]safe.Member, error) {
	return v.d.Sets.Members(v.Ctx, id, v.obj.GetUID())
}

// WaveHash implements plan.View: read from the API server (source.WaveHash).
func (v workloadView) WaveHash(namespace string, refs []reference.Reference) (string, error) {
	return source.WaveHash(v.Ctx, v.d.APIReader, v.d.Scope, namespace, refs)
}
