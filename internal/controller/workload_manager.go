package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/go-logr/logr"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/apply"
	"github.com/reroll/reroll/internal/changeset"
	"github.com/reroll/reroll/internal/coalesce"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/firstsight"
	"github.com/reroll/reroll/internal/index"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/observe"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/scope"
	datasource "github.com/reroll/reroll/internal/source"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/validator"
	"github.com/reroll/reroll/internal/webhook"
	"github.com/reroll/reroll/internal/workload"
)

// notifiedBuffer is the room for wake-ups of ended notifications per kind.
const notifiedBuffer = 1024

// Setup registers one reconciler per built-in workload kind not in
// opts.IgnoredWorkloads with mgr, with its field index and watches. The
// manager's cache must come from opts.Scope.CacheOptions. A zero Strategy
// means annotations and zero annotation names mean Reloader's. It returns an
// error when an index or a controller cannot be registered.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := opts.complete(ctx, mgr); err != nil {
		return err
	}
	sh, err := newShared(ctx, mgr, opts)
	if err != nil {
		return err
	}
	kinds := opts.handledKinds(ctx, mgr)
	var registered []workload.Kind
	for _, kind := range kinds {
		ok, err := setupKind(ctx, mgr, opts, kind, sh)
		if err != nil {
			return err
		}
		if ok {
			registered = append(registered, kind)
		}
	}
	if sh.sets != nil {
		// Once its kinds are known: a scrape reads them.
		if err := sh.sets.Register(); err != nil {
			return fmt.Errorf("registering the change set metrics: %w", err)
		}
	}
	// Copies of versioned configuration (#33): their garbage collection
	// and the rotation receipts, over the kinds registered (a kind the API
	// server does not serve, or an ignored one, has no informer to read).
	if err := setupPinGC(mgr, opts, registered); err != nil {
		return err
	}
	if !opts.NoEviction && opts.PodRecords.Name != "" {
		// Annotated pods whose owner none of the kinds above is.
		if err := setupAnnotatedPods(mgr, opts, kinds); err != nil {
			return err
		}
	}
	return nil
}

// complete fills o's defaults and what Setup derives from the cluster: the
// store (unless given), the CSI integration (when the API serves it), the
// trigger strategy, the annotation names, and ManagedLabel with the
// admission webhook.
func (o *Options) complete(ctx context.Context, mgr ctrl.Manager) error {
	// The planner keeps ManagedLabel on the workloads it manages while the
	// admission webhook selects on it.
	o.Managed = o.Admission.Enabled
	// ConfigMaps and Secrets live in the store, not in the manager's cache
	// (internal/store says why). The controllers' sources wait for it.
	if o.Store == nil {
		st, err := store.New(mgr.GetConfig(), o.StoreOptions())
		if err != nil {
			return err
		}
		if err := mgr.Add(st); err != nil {
			return fmt.Errorf("adding the ConfigMap and Secret store: %w", err)
		}
		o.Store = st
	}
	if !o.Annotations.Ignores(reference.SecretProviderClass) {
		served, err := datasource.SetupProviderClasses(ctx, mgr, o.Scope)
		if err != nil {
			return err
		}
		o.Annotations.SecretProviderClasses = served
	}
	if o.Strategy == "" {
		o.Strategy = trigger.Annotations
	}
	if o.Annotations.Names == (annotation.Names{}) {
		o.Annotations.Names = annotation.DefaultNames()
	}
	return nil
}

// shared is what the reconcilers of every kind share, built once by Setup.
type shared struct {
	journal   *state.JobJournal
	baselines *state.Baselines
	endpoint  *notify.Sender
	// counted is the tracker of the concurrent rollout bound.
	counted *rollout.Tracker
	sets    *changeset.Sets
	// validation is the gate of new content (nil when validation is off).
	validation *validator.Gate
	// readNamespaces is true when Reroll may list and watch Namespaces.
	readNamespaces bool
	// knownCopies are versioned config's copies proven from an API read,
	// for every kind's writer.
	knownCopies *apply.KnownCopies
}

// newShared builds what the reconcilers share, and adds its runnables (the
// alert and notification senders, the Job journal, the halt records) to
// mgr.
func newShared(ctx context.Context, mgr ctrl.Manager, opts Options) (*shared, error) {
	if run, ok := opts.Alerter.(manager.Runnable); ok {
		// The sender stops with the manager.
		if err := mgr.Add(run); err != nil {
			return nil, fmt.Errorf("adding the alert sender: %w", err)
		}
	}
	sh := &shared{knownCopies: &apply.KnownCopies{}}
	var err error
	if sh.journal, err = newJournal(ctx, mgr, opts); err != nil {
		return nil, err
	}
	if opts.DeferRecord && opts.Baselines.Name != "" {
		sh.baselines = state.NewBaselines(mgr.GetClient(), mgr.GetAPIReader(), opts.Baselines, opts.Key)
	}
	if opts.WebhookURL != "" {
		sh.endpoint = notify.NewSender(notify.Config{Sink: notify.Endpoint, URL: opts.WebhookURL, Log: ctrl.LoggerFrom(ctx).WithName("notify")})
		// The sender stops with the manager.
		if err := mgr.Add(sh.endpoint); err != nil {
			return nil, fmt.Errorf("adding the notification sender: %w", err)
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sh.counted = rollout.NewTracker(opts.RolloutTimeout, opts.Key, mgr.GetClient(), now)
	if err := sh.counted.Register(); err != nil {
		return nil, fmt.Errorf("registering the rollout metrics: %w", err)
	}
	if sh.readNamespaces, err = scope.CanWatchNamespaces(ctx, mgr.GetClient()); err != nil {
		return nil, err
	}
	if !sh.readNamespaces {
		ctrl.LoggerFrom(ctx).Info("Not reading Namespace annotations (rollout window, max-concurrent-rollouts): no permission to list and watch namespaces")
	}
	if sh.sets, err = newChangeSets(mgr, opts, sh.readNamespaces); err != nil {
		return nil, err
	}
	if opts.Validate {
		if sh.validation, err = setupValidation(ctx, mgr, opts); err != nil {
			return nil, err
		}
	}
	return sh, nil
}

// newJournal returns the Job journal (nil without Options.JobJournal),
// added to mgr: once leading, it re-creates the Jobs a previous leader
// left deleted.
func newJournal(ctx context.Context, mgr ctrl.Manager, opts Options) (*state.JobJournal, error) {
	if opts.JobJournal.Name == "" {
		return nil, nil
	}
	entries := state.NewEntries(mgr.GetClient(), mgr.GetAPIReader(), opts.JobJournal, opts.Key, "the Job journal")
	entries.MaxAge, entries.Now = state.JobJournalMaxAge, opts.Now
	jl := ctrl.LoggerFrom(ctx).WithName("job-journal")
	journal := state.NewJobJournal(entries, boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, &jl) //nolint:staticcheck // see WorkloadReconciler.Recorder
	if err := mgr.Add(journal); err != nil {
		return nil, fmt.Errorf("adding the Job journal: %w", err)
	}
	return journal, nil
}

// newChangeSets returns safe delivery's change sets (nil without
// Options.ChangeSets), with the watch of their halt records and the expiry
// of superseded ones added to mgr.
func newChangeSets(mgr ctrl.Manager, opts Options, readNamespaces bool) (*changeset.Sets, error) {
	if opts.ChangeSets.Name == "" {
		return nil, nil
	}
	return changeset.Start(mgr, opts.ChangeSets, FieldManager, boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
		changeset.Config{Reader: mgr.GetClient(), Scope: opts.Scope, ReadNamespaces: readNamespaces, Key: opts.Key, Store: opts.Store,
			BakeTime: opts.BakeTime, RolloutTimeout: opts.RolloutTimeout, Now: opts.Now})
}

// handledKinds returns the workload kinds to set up: o.Kinds (the built-in
// ones when nil), and the --evict-owner kinds when restarts by eviction are
// on and permitted; it sets o.NoEviction when they are not.
func (o *Options) handledKinds(ctx context.Context, mgr ctrl.Manager) []workload.Kind {
	log := ctrl.LoggerFrom(ctx)
	kinds := o.Kinds
	if kinds == nil {
		kinds = workload.Builtin()
	}
	if !o.PodEviction {
		// No pod informer, no pod in the cache, no pod permission needed.
		log.Info("Not watching pods: restarts by eviction are off (--enable-pod-eviction)")
		o.NoEviction = true
	} else if err := o.Scope.EvictionAllowed(ctx, mgr.GetClient()); err != nil {
		log.Error(err, "Not restarting any workload by eviction")
		o.NoEviction = true
	} else {
		for _, owner := range o.EvictOwners {
			kinds = append(kinds, owner)
		}
	}
	return kinds
}

// setupKind registers the reconciler of kind with mgr, unless the kind is
// ignored, not served or not permitted (one log line then); it reports
// whether it registered it.
func setupKind(ctx context.Context, mgr ctrl.Manager, opts Options, kind workload.Kind, sh *shared) (bool, error) {
	log := ctrl.LoggerFrom(ctx)
	if slices.Contains(opts.IgnoredWorkloads, workload.Plural(kind)) {
		log.Info("Not handling ignored workload kind", "kind", kind.Name())
		return false, nil
	}
	if err := opts.Scope.Available(ctx, mgr, kind); err != nil {
		if errors.Is(err, scope.ErrNotServed) {
			log.Info("Not handling workload kind: the API server does not serve it", "kind", kind.Name(), "detail", err.Error())
		} else {
			log.Error(err, "Not handling workload kind", "kind", kind.Name())
		}
		return false, nil
	}
	var wake chan event.GenericEvent
	if p, ok := rollout.ProgressOf(kind); ok {
		wake = make(chan event.GenericEvent, rollout.WakeBuffer)
		sh.counted.Add(rollout.Kind{Kind: kind, Progress: p, Wake: wake})
		if sh.sets != nil {
			sh.sets.AddKind(rollout.Kind{Kind: kind, Progress: p})
		}
	}
	r := newReconciler(mgr, opts, kind, sh)
	r.slotFreed = wake
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return false, err
	}
	if _, owner := kind.(workload.PodOwner); opts.Admission.Enabled && !owner {
		r.registerWebhook(mgr)
	}
	return true, nil
}

// newReconciler returns the reconciler of kind with its gather and write
// steps (observe.Deps, apply.Applier) built from opts and what the kinds
// share; SetupWithManager adds the debounce.
func newReconciler(mgr ctrl.Manager, opts Options, kind workload.Kind, sh *shared) *WorkloadReconciler {
	r := &WorkloadReconciler{
		Client:         mgr.GetClient(),
		informers:      mgr.GetCache(),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
		Kind:           kind,
		Options:        opts,
		metrics:        metrics.NewWorkloads(kind.Name(), nil),
		rollouts:       sh.counted,
		changeSets:     sh.sets,
		readNamespaces: sh.readNamespaces,
	}
	if _, ok := kind.(workload.Roller); ok {
		// A Job: re-created through the journal.
		r.journal = sh.journal
	}
	var notifications *apply.Notifications
	if sh.endpoint != nil {
		notifications = apply.NewNotifications()
		r.notified = make(chan event.GenericEvent, notifiedBuffer)
	}
	if !opts.InstalledAt.IsZero() {
		r.creations = opts.creations
		if r.creations == nil {
			r.creations = firstsight.NewMemory()
		}
	}
	r.observe = &observe.Deps{Client: r.Client, APIReader: r.APIReader, Kind: kind, Options: opts.PlanOptions, DeferRecord: r.defersRecord(),
		Store: opts.Store, Scope: opts.Scope, Now: opts.Now, Creations: r.creations, Baselines: sh.baselines, ReadNamespaces: sh.readNamespaces,
		Coalescing: r.coalescing(), Sets: sh.sets, Storm: opts.Storm, Validation: sh.validation, Notifications: notifications,
		LegacyRecordsUntil: opts.LegacyRecordsUntil,
		Delivery:           safe.Options{Window: opts.ChangeSetWindow, BakeTime: opts.BakeTime, HaltAfter: opts.HaltAfterFailedRollouts, Recheck: opts.Recheck}}
	r.ownWrites = apply.NewOwnWrites()
	r.apply = &apply.Applier{Client: r.Client, Reader: r.APIReader, Kind: kind, Recorder: r.Recorder, Key: opts.Key, Strategy: opts.Strategy, Alerter: opts.Alerter,
		Sets: sh.sets, Metrics: r.metrics, Endpoint: sh.endpoint, Notifications: notifications, Notified: r.notified, Journal: r.journal,
		Creations: r.creations, Baselines: sh.baselines, Rollouts: sh.counted, KnownCopies: sh.knownCopies,
		CopyLabels: opts.Scope.ResourceLabelKeys(), Now: opts.Now, OwnWrites: r.ownWrites}
	if opts.Store != nil {
		r.apply.Copies = opts.Store
	}
	return r
}

// defersRecord reports whether Reroll leaves the record off workloads it
// has not rolled (Options.DeferRecord): only with the first-sight rule,
// which stands in for the baseline after a restart; without the admission
// webhook; and without --reload-on-delete, since a deletion made while no
// Reroll runs leaves nothing in the API for the rule to find (a record
// finds it: the object it holds is gone).
func (r *WorkloadReconciler) defersRecord() bool {
	return r.Options.DeferRecord && r.creations != nil && !r.Options.Admission.Enabled && !r.Options.ReloadOnDelete
}

// SetupWithManager registers r's field indexes and controller with mgr.
func (r *WorkloadReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := r.index(ctx, mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(workload.ControllerName(r.Kind)).
		// The workload itself: a new workload is recorded on first sight; a
		// change to its pod template or to its annotations changes what it
		// consumes. Status-only updates (every rollout makes many) are
		// filtered out.
		// The first-sight rule notes each creation seen live first. The
		// update of Reroll's own write of a settled plan is dropped, last
		// (apply.OwnWrites says why).
		For(r.Kind.New(), builder.WithPredicates(r.creations.Noted(), r.workloadChanges(), r.notOwnSettledWrite()))
	b, err := r.watchConsumed(ctx, b)
	if err != nil {
		return err
	}
	b = r.watchOthers(b).WithOptions(r.Options.controllerOptions(mgr.GetLogger()))
	if err := b.Complete(metrics.CountReconciles(r)); err != nil {
		return fmt.Errorf("creating the %s controller: %w", r.Kind.Name(), err)
	}
	return nil
}

// index registers r's field indexes: the references, the restarts under
// way, and, by kind, the rollouts, change sets and waves, and the
// Deployment whose template a workload runs.
func (r *WorkloadReconciler) index(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, r.Kind.New(), index.References, r.indexReferences); err != nil {
		return fmt.Errorf("indexing %s by references: %w", r.Kind.Name(), err)
	}
	if err := indexer.IndexField(ctx, r.Kind.New(), index.Evicting, index.EvictingOf); err != nil {
		return fmt.Errorf("indexing %s by restarts under way: %w", r.Kind.Name(), err)
	}
	if p, ok := rollout.ProgressOf(r.Kind); ok && r.rollouts != nil {
		if err := indexer.IndexField(ctx, r.Kind.New(), rollout.Index, rollout.Indexer(p, r.Options.Key)); err != nil {
			return fmt.Errorf("indexing %s by rollout: %w", r.Kind.Name(), err)
		}
	}
	if _, ok := rollout.ProgressOf(r.Kind); ok && r.changeSets != nil {
		if err := changeset.Index(ctx, indexer, r.Kind); err != nil {
			return err
		}
	}
	if _, ok := r.Kind.(workload.TemplateReader); ok {
		if err := indexer.IndexField(ctx, r.Kind.New(), index.TemplateFrom, func(obj client.Object) []string { return index.TemplateFromOf(r.Kind, obj) }); err != nil {
			return fmt.Errorf("indexing %s by the Deployment whose template it runs: %w", r.Kind.Name(), err)
		}
	}
	return nil
}

// watchConsumed adds to b the watches of what workloads consume:
// ConfigMaps, Secrets and SecretProviderClassPodStatuses, through one
// debounce.
func (r *WorkloadReconciler) watchConsumed(ctx context.Context, b *builder.Builder) (*builder.Builder, error) {
	relevantCM, relevantSecret := r.relevantChange(ctx, reference.ConfigMap), r.relevantChange(ctx, reference.Secret)
	// ConfigMaps and Secrets: a data change maps through the reference
	// index to the workloads that may consume the object. Updates of
	// other metadata are dropped here, before any work. A kind in
	// --resources-to-ignore is not watched at all, so Reroll needs no
	// access to it.
	// One debounce for both kinds: a change of either extends the wait.
	debounce := coalesce.New(r.coalescing())
	r.coalesce = debounce
	r.observe.Coalesce = debounce
	for kind, relevant := range map[reference.Kind]predicate.Predicate{reference.ConfigMap: relevantCM, reference.Secret: relevantSecret} {
		if !r.Options.Store.Watches(kind) {
			continue
		}
		src, err := r.Options.Store.Source(kind, r.metrics.TrackChanges(coalesce.Handler(debounce, r.metrics.CountMatched(r.requestsFor(kind)))), relevant)
		if err != nil {
			return nil, err
		}
		b = b.WatchesRawSource(src)
	}
	if !r.Options.Annotations.Ignores(reference.SecretProviderClass) {
		// Secrets Store CSI Driver statuses (--enable-csi-integration): a
		// change of the versions mounted for a SecretProviderClass maps,
		// through the reference index, to the workloads that mount it.
		b = b.Watches(&csiv1.SecretProviderClassPodStatus{}, r.metrics.TrackChanges(coalesce.Handler(debounce, r.metrics.CountMatched(r.requestsForProviderClassStatus))),
			builder.WithPredicates(providerClassChanged()))
	}
	return b, nil
}

// watchOthers adds to b the watches that wake a workload for something
// other than what it consumes.
func (r *WorkloadReconciler) watchOthers(b *builder.Builder) *builder.Builder {
	if _, ok := r.Kind.(workload.TemplateReader); ok {
		// Deployments whose pod template an Argo Rollout runs
		// (spec.workloadRef): a change to that template changes what the
		// Rollout consumes, and must reach its record before the next data
		// change, or that change would look new and roll nothing. Creates and
		// deletes pass too; status updates do not.
		b = b.Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.requestsForTemplate),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	if r.slotFreed != nil {
		// Workloads waiting for a slot of the concurrent rollout bound,
		// woken when another rollout completes (see rollout.Tracker.WakeOldest).
		b = b.WatchesRawSource(source.Channel(r.slotFreed, &handler.EnqueueRequestForObject{}))
	}
	if r.notified != nil {
		// POSTs to the notification endpoint that ended: the workload's
		// record waits for them (see notifyEndpoint).
		b = b.WatchesRawSource(source.Channel(r.notified, &handler.EnqueueRequestForObject{}))
	}
	// Pods (stripped by eviction.TransformPod), only with
	// --enable-pod-eviction: a restart by eviction evicts the next pod when
	// the replacement of the last is Ready, and a --evict-owner kind reads
	// its references from its pods.
	if !r.Options.NoEviction {
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.requestsForPod), builder.WithPredicates(podChanged()))
	}
	if r.readNamespaces {
		// Namespaces' annotations (rollout window, rollout bound): a
		// workload deferred by them is decided again when they change, so
		// that a deferral waits for its gate's opening instead of polling.
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.requestsPendingInNamespace),
			builder.OnlyMetadata, builder.WithPredicates(predicate.AnnotationChangedPredicate{}))
	}
	if sel := r.Options.Scope.NamespaceSelector; sel != nil && !sel.Empty() {
		// Namespaces, metadata only, for --namespace-selector: a namespace
		// whose labels change may enter the scope.
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.requestsInNamespace),
			builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b
}

// controllerOptions are the options of each of Reroll's controllers and
// its workqueue (the fair queue logs with log).
func (o Options) controllerOptions(log logr.Logger) controller.Options {
	workers := o.MaxConcurrentReconciles
	if workers <= 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	// Reconciles of different workloads are independent (the workqueue
	// never hands one workload to two workers), so a wide fan-out is
	// bounded by the client's QPS rather than by one worker's round trips.
	// The queue puts a namespace over its budget behind the others, so one
	// tenant's flood or many costly workloads delay that tenant only.
	newQueue := fairness.NewQueue(o.Fairness, log)
	if o.FirstPass != nil {
		newQueue = o.FirstPass.Queue(newQueue)
	}
	return controller.Options{MaxConcurrentReconciles: workers, NewQueue: newQueue}
}

// workloadChanges passes the workload events that may change a decision:
// generation and annotation changes, and, for kinds that report progress,
// the status update that completes a rollout Reroll stamped (it frees a
// slot of the concurrent rollout bound).
func (r *WorkloadReconciler) workloadChanges() predicate.Predicate {
	ps := []predicate.Predicate{predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}}
	if p, ok := rollout.ProgressOf(r.Kind); ok && r.rollouts != nil {
		ps = append(ps, rollout.Finished(p, r.Options.Key))
	}
	return predicate.Or(ps...)
}

// notOwnSettledWrite drops the update event of Reroll's own write of a
// settled plan (apply.OwnWrites.Seen): the decision on it would find
// nothing to do. Every other event passes.
func (r *WorkloadReconciler) notOwnSettledWrite() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !r.ownWrites.Seen(e.ObjectOld, e.ObjectNew)
	}}
}

// DefaultMaxConcurrentReconciles is the default of
// Options.MaxConcurrentReconciles (--max-concurrent-reconciles), per workload
// kind. See docs/benchmarks.md (the fanout profile) for the measurement.
const DefaultMaxConcurrentReconciles = 4

// DefaultCoalesceWindow is the default of Options.CoalesceWindow
// (--coalesce-window); see coalesce.DefaultWindow.
const DefaultCoalesceWindow = coalesce.DefaultWindow

// DefaultCoalesceMaxWait is the default of Options.CoalesceMaxWait
// (--coalesce-max-wait); see coalesce.DefaultMaxWait.
const DefaultCoalesceMaxWait = coalesce.DefaultMaxWait

// coalescing is the debounce of r's ConfigMap and Secret watches.
func (r *WorkloadReconciler) coalescing() coalesce.Options {
	maxWait := r.Options.CoalesceMaxWait
	if maxWait == 0 {
		maxWait = DefaultCoalesceMaxWait
	}
	return coalesce.Options{Window: r.Options.CoalesceWindow, MaxWait: maxWait}
}

// relevantChange passes creates, deletes, and updates that change the data
// digests or the annotations that decide selection (ignore, match); an update
// of labels or other annotations alone is dropped, unless a workload in the
// pod-reloader dialect lists the object (every write counts there).
func (r *WorkloadReconciler) relevantChange(ctx context.Context, kind reference.Kind) predicate.Predicate {
	keys := r.Options.Annotations.SelectionKeys()
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := digest.Of(e.ObjectOld)
			after, ok2 := digest.Of(e.ObjectNew)
			if !ok1 || !ok2 || !maps.Equal(before.Keys, after.Keys) {
				return true
			}
			if !sameValues(e.ObjectOld, e.ObjectNew, keys) {
				return true
			}
			return r.anyWriteMatters(ctx, kind, e.ObjectNew)
		},
	}
}

func sameValues(a, b metav1.Object, keys []string) bool {
	for _, k := range keys {
		if a.GetAnnotations()[k] != b.GetAnnotations()[k] {
			return false
		}
	}
	return true
}

// The certificate rotation of --enable-webhook (cert-controller) keeps the
// serving certificate in a Secret and the CA in the webhook configuration, so
// it needs, only when the webhook is enabled with self-signed certificates:
// get, list and watch on Secrets in Reroll's own namespace and update on its
// Secret; get, list and watch on mutatingwebhookconfigurations and update on
// its own; with --content-webhook-configuration-name, the same on
// validatingwebhookconfigurations. They are granted by
// config/components/webhook/rbac.yaml, config/components/content-webhook/rbac.yaml
// and the chart's templates/webhook.yaml, not by the base role, which must
// stay least-privilege.

// ManagedLabel is the workload metadata label Reroll keeps on every workload
// it manages while the admission webhook is enabled. The webhook's
// MutatingWebhookConfiguration selects on it (objectSelector), so writes of
// every other object never reach Reroll. Labels on a workload's metadata roll
// nothing.
const ManagedLabel = plan.ManagedLabel

// WebhookPath returns the path the admission webhook of kind is served on
// (webhook.Path): "/mutate-deployment" for the built-in kinds.
func WebhookPath(k workload.Kind) string { return webhook.Path(k) }

// AdmissionOptions configure the mutating admission webhook (--enable-webhook).
type AdmissionOptions struct {
	// Enabled registers the webhook's handlers on the manager's webhook
	// server and makes the reconciler keep ManagedLabel on the workloads it
	// manages.
	Enabled bool
}

// registerWebhook serves r's admission handler (internal/webhook) on the
// manager's webhook server.
func (r *WorkloadReconciler) registerWebhook(mgr ctrl.Manager) {
	mgr.GetWebhookServer().Register(WebhookPath(r.Kind), r.admissionHandler())
}

// admissionHandler is the HTTP handler of r's admission webhook
// (webhook.Handler).
func (r *WorkloadReconciler) admissionHandler() http.Handler {
	return webhook.Handler(&webhook.WorkloadAdmission{Kind: r.Kind, Annotations: r.Options.Annotations,
		Namespaces: r.Options.Scope.Namespaces, IgnoredNamespaces: r.Options.Scope.IgnoredNamespaces, Key: r.Options.Key})
}
