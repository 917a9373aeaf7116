package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/reroll/reroll/internal/admissionlimit"
	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/coalesce"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/trigger"
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
	// The planner keeps ManagedLabel on the workloads it manages while the
	// admission webhook selects on it.
	opts.Managed = opts.Admission.Enabled
	// ConfigMaps and Secrets live in the store, not in the manager's cache
	// (internal/store says why). The controllers' sources wait for it.
	if opts.Store == nil {
		st, err := store.New(mgr.GetConfig(), opts.StoreOptions())
		if err != nil {
			return err
		}
		if err := mgr.Add(st); err != nil {
			return fmt.Errorf("adding the ConfigMap and Secret store: %w", err)
		}
		opts.Store = st
	}
	if !opts.Annotations.Ignores(reference.SecretProviderClass) {
		served, err := setupCSI(ctx, mgr, opts.Scope)
		if err != nil {
			return err
		}
		opts.Annotations.SecretProviderClasses = served
	}
	if opts.Strategy == "" {
		opts.Strategy = trigger.Annotations
	}
	if opts.Annotations.Names == (annotation.Names{}) {
		opts.Annotations.Names = annotation.DefaultNames()
	}
	if run, ok := opts.Alerter.(manager.Runnable); ok {
		// The sender stops with the manager.
		if err := mgr.Add(run); err != nil {
			return fmt.Errorf("adding the alert sender: %w", err)
		}
	}
	var journal *jobJournal
	if opts.JobJournal.Name != "" {
		journal = &jobJournal{store: newEntryStore(mgr.GetClient(), mgr.GetAPIReader(), opts.JobJournal, opts.Key, "the Job journal"),
			recorder: boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}} //nolint:staticcheck // see WorkloadReconciler.Recorder
		journal.store.maxAge, journal.store.now = JobJournalMaxAge, opts.Now
		jl := ctrl.LoggerFrom(ctx).WithName("job-journal")
		journal.log = &jl
		// Once leading, re-create the Jobs a previous leader left deleted.
		if err := mgr.Add(journal); err != nil {
			return fmt.Errorf("adding the Job journal: %w", err)
		}
	}
	var baselines *baselineStore
	if opts.DeferRecord && opts.Baselines.Name != "" {
		baselines = newBaselineStore(mgr.GetClient(), mgr.GetAPIReader(), opts.Baselines, opts.Key)
	}
	var endpoint *notify.Sender
	if opts.WebhookURL != "" {
		endpoint = notify.NewSender(notify.Config{Sink: notify.Endpoint, URL: opts.WebhookURL, Log: ctrl.LoggerFrom(ctx).WithName("notify")})
		// The sender stops with the manager.
		if err := mgr.Add(endpoint); err != nil {
			return fmt.Errorf("adding the notification sender: %w", err)
		}
	}
	log := ctrl.LoggerFrom(ctx)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	counted := rollout.NewTracker(opts.RolloutTimeout, opts.Key, mgr.GetClient(), now)
	if err := counted.Register(); err != nil {
		return fmt.Errorf("registering the rollout metrics: %w", err)
	}
	readNamespaces, err := canWatchNamespaces(ctx, mgr.GetClient())
	if err != nil {
		return err
	}
	if !readNamespaces {
		log.Info("Not reading Namespace annotations (rollout window, max-concurrent-rollouts): no permission to list and watch namespaces")
	}
	var sets *changeSets
	if opts.ChangeSets.Name != "" {
		records, err := halts.New(mgr.GetConfig(), mgr.GetClient(), mgr.GetAPIReader(), opts.ChangeSets, FieldManager, opts.Key)
		if err != nil {
			return err
		}
		records.Recorder = boundedRecorder{mgr.GetEventRecorderFor(FieldManager)} //nolint:staticcheck // see WorkloadReconciler.Recorder
		// The halt records, read at each change that rolls: from a watch of
		// their one ConfigMap, never from the API server per change.
		if err := mgr.Add(records); err != nil {
			return fmt.Errorf("adding the watch of the halt records: %w", err)
		}
		sets = &changeSets{records: records, reader: mgr.GetClient(), scope: opts.Scope, readNamespaces: readNamespaces, key: opts.Key, store: opts.Store}
		// The records of superseded sets go; the leader deletes them.
		if err := mgr.Add(manager.RunnableFunc(sets.expire)); err != nil {
			return fmt.Errorf("adding the expiry of the halt records: %w", err)
		}
	}
	kinds := opts.Kinds
	if kinds == nil {
		kinds = workload.Builtin()
	}
	if !opts.PodEviction {
		// No pod informer, no pod in the cache, no pod permission needed.
		log.Info("Not watching pods: restarts by eviction are off (--enable-pod-eviction)")
		opts.NoEviction = true
	} else if err := evictionAllowed(ctx, mgr, opts.Scope); err != nil {
		log.Error(err, "Not restarting any workload by eviction")
		opts.NoEviction = true
	} else {
		for _, o := range opts.EvictOwners {
			kinds = append(kinds, o)
		}
	}
	for _, kind := range kinds {
		if slices.Contains(opts.IgnoredWorkloads, workload.Plural(kind)) {
			log.Info("Not handling ignored workload kind", "kind", kind.Name())
			continue
		}
		if err := available(ctx, mgr, kind, opts.Scope); err != nil {
			if errors.Is(err, errNotServed) {
				log.Info("Not handling workload kind: the API server does not serve it", "kind", kind.Name(), "detail", err.Error())
			} else {
				log.Error(err, "Not handling workload kind", "kind", kind.Name())
			}
			continue
		}
		var wake chan event.GenericEvent
		if p, ok := rollout.ProgressOf(kind); ok {
			wake = make(chan event.GenericEvent, rollout.WakeBuffer)
			counted.Add(rollout.Kind{Kind: kind, Progress: p, Wake: wake})
			if sets != nil {
				sets.kinds = append(sets.kinds, rollout.Kind{Kind: kind, Progress: p})
			}
		}
		r := &WorkloadReconciler{
			Client:     mgr.GetClient(),
			APIReader:  mgr.GetAPIReader(),
			Recorder:   boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
			Kind:       kind,
			Options:    opts,
			endpoint:   endpoint,
			metrics:    metrics.NewWorkloads(kind.Name(), nil),
			rollouts:   counted,
			slotFreed:  wake,
			changeSets: sets,
			baselines:  baselines,

			readNamespaces: readNamespaces,
		}
		if _, isJob := kind.(workload.Job); isJob {
			r.journal = journal
		}
		if endpoint != nil {
			r.notifications = newNotifications()
			r.notified = make(chan event.GenericEvent, notifiedBuffer)
		}
		if !opts.InstalledAt.IsZero() {
			r.creations = opts.creations
			if r.creations == nil {
				r.creations = newCreations()
			}
		}
		if err := r.SetupWithManager(ctx, mgr); err != nil {
			return err
		}
		if _, owner := kind.(workload.PodOwner); opts.Admission.Enabled && !owner {
			r.registerWebhook(mgr)
		}
	}
	if sets != nil {
		// Once its kinds are known: a scrape reads them.
		if err := registerLatest(sets); err != nil {
			return fmt.Errorf("registering the change set metrics: %w", err)
		}
	}
	if !opts.NoEviction && opts.PodRecords.Name != "" {
		// Annotated pods whose owner none of the kinds above is.
		if err := setupAnnotatedPods(mgr, opts, kinds); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithManager registers r's field index and controller with mgr.
func (r *WorkloadReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), referenceIndex, r.indexReferences); err != nil {
		return fmt.Errorf("indexing %s by references: %w", r.Kind.Name(), err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), evictingIndex, indexEvicting); err != nil {
		return fmt.Errorf("indexing %s by restarts under way: %w", r.Kind.Name(), err)
	}
	if p, ok := rollout.ProgressOf(r.Kind); ok && r.rollouts != nil {
		if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), rollout.Index, rollout.Indexer(p, r.Options.Key)); err != nil {
			return fmt.Errorf("indexing %s by rollout: %w", r.Kind.Name(), err)
		}
	}
	if _, ok := rollout.ProgressOf(r.Kind); ok && r.changeSets != nil {
		if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), changeSetIndex, indexChangeSets); err != nil {
			return fmt.Errorf("indexing %s by change set: %w", r.Kind.Name(), err)
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), waveIndex, indexWave); err != nil {
			return fmt.Errorf("indexing %s by wave: %w", r.Kind.Name(), err)
		}
	}
	_, readsTemplates := r.Kind.(workload.TemplateReader)
	if readsTemplates {
		if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.New(), templateIndex, r.indexTemplateFrom); err != nil {
			return fmt.Errorf("indexing %s by the Deployment whose template it runs: %w", r.Kind.Name(), err)
		}
	}
	relevantCM, relevantSecret := r.relevantChange(ctx, reference.ConfigMap), r.relevantChange(ctx, reference.Secret)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName(r.Kind)).
		// The workload itself: a new workload is recorded on first sight; a
		// change to its pod template or to its annotations changes what it
		// consumes. Status-only updates (every rollout makes many) are
		// filtered out.
		// The first-sight rule notes each creation seen live first.
		For(r.Kind.New(), builder.WithPredicates(r.creations.noted(), r.workloadChanges()))
	// ConfigMaps and Secrets: a data change maps through the reference
	// index to the workloads that may consume the object. Updates of
	// other metadata are dropped here, before any work. A kind in
	// --resources-to-ignore is not watched at all, so Reroll needs no
	// access to it.
	// One debounce for both kinds: a change of either extends the wait.
	debounce := coalesce.New(r.coalescing())
	r.coalesce = debounce
	for kind, relevant := range map[reference.Kind]predicate.Predicate{reference.ConfigMap: relevantCM, reference.Secret: relevantSecret} {
		if !r.Options.Store.Watches(kind) {
			continue
		}
		src, err := r.Options.Store.Source(kind, r.trackChanges(coalesce.Handler(debounce, r.countMatched(r.requestsFor(kind)))), relevant)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	if !r.Options.Annotations.Ignores(reference.SecretProviderClass) {
		// Secrets Store CSI Driver statuses (--enable-csi-integration): a
		// change of the versions mounted for a SecretProviderClass maps,
		// through the reference index, to the workloads that mount it.
		b = b.Watches(&csiv1.SecretProviderClassPodStatus{}, r.trackChanges(coalesce.Handler(debounce, r.countMatched(r.requestsForProviderClassStatus))),
			builder.WithPredicates(providerClassChanged()))
	}
	if readsTemplates {
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
	workers := r.Options.MaxConcurrentReconciles
	if workers <= 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	// Reconciles of different workloads are independent (the workqueue
	// never hands one workload to two workers), so a wide fan-out is
	// bounded by the client's QPS rather than by one worker's round trips.
	// The queue puts a namespace over its budget behind the others, so one
	// tenant's flood or many costly workloads delay that tenant only.
	b = b.WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: fairness.NewQueue(r.Options.Fairness, mgr.GetLogger())})
	if err := b.Complete(countedReconciler{r}); err != nil {
		return fmt.Errorf("creating the %s controller: %w", r.Kind.Name(), err)
	}
	return nil
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

// errNotServed marks a kind whose API the cluster does not serve.
var errNotServed = errors.New("API not served")

// available checks that the API server serves kind and that Reroll may
// list, watch and patch it (in each namespace of the scope, or cluster-wide),
// so that one missing CRD or permission costs one log line instead of a
// controller that never syncs. It returns an error wrapping errNotServed,
// or one naming the missing permission.
func available(ctx context.Context, mgr ctrl.Manager, kind workload.Kind, scope Scope) error {
	gvk, err := apiutil.GVKForObject(kind.New(), mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("kind %s: %w", kind.Name(), err)
	}
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: %s", errNotServed, gvk.String())
	}
	if err != nil {
		return fmt.Errorf("discovering %s: %w", gvk.String(), err)
	}
	return permitted(ctx, mgr, scope, gvk.Group, mapping.Resource.Resource, "list", "watch", "patch")
}

// permitted checks, with SelfSubjectAccessReviews, that Reroll may use verbs
// on resource of group in each namespace of the scope (or cluster-wide); the
// error names the first missing permission. A resource "pods/eviction"
// names a subresource.
func permitted(ctx context.Context, mgr ctrl.Manager, scope Scope, group, resource string, verbs ...string) error {
	resource, subresource, _ := strings.Cut(resource, "/")
	namespaces := scope.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, verb := range verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: subresource,
				},
			}}
			if err := mgr.GetClient().Create(ctx, review); err != nil {
				return fmt.Errorf("checking permission to %s %s: %w", verb, resource, err)
			}
			if !review.Status.Allowed {
				where := "cluster-wide"
				if ns != "" {
					where = "in namespace " + ns
				}
				name := resource
				if subresource != "" {
					name += "/" + subresource
				}
				return fmt.Errorf("missing RBAC permission: %s on %s (group %q) %s", verb, name, group, where)
			}
		}
	}
	return nil
}

// evictionAllowed checks the permissions a restart by eviction needs: list
// and watch pods, create pods/eviction. Without them Reroll does not watch
// pods, and workloads that ask for eviction are told so by an Event.
func evictionAllowed(ctx context.Context, mgr ctrl.Manager, scope Scope) error {
	if err := permitted(ctx, mgr, scope, "", "pods", "list", "watch"); err != nil {
		return err
	}
	return permitted(ctx, mgr, scope, "", "pods/eviction", "create")
}

// controllerName is unique per kind: "deployment" for the built-in kinds,
// "<kind>.<group>" for others (two groups may both have a StatefulSet).
func controllerName(k workload.Kind) string {
	name := strings.ToLower(k.Name())
	if u, ok := k.(workload.Unstructured); ok && u.GVK.Group != "" {
		name += "." + u.GVK.Group
	}
	return name
}

// The certificate rotation of --enable-webhook (cert-controller) keeps the
// serving certificate in a Secret and the CA in the webhook configuration, so
// it needs, only when the webhook is enabled with self-signed certificates:
// get, list and watch on Secrets in Reroll's own namespace and update on its
// Secret; get, list and watch on mutatingwebhookconfigurations and update on
// its own. They are granted by config/components/webhook/rbac.yaml and the chart's
// templates/webhook.yaml, not by the base role, which must stay
// least-privilege.

// ManagedLabel is the workload metadata label Reroll keeps on every workload
// it manages while the admission webhook is enabled. The webhook's
// MutatingWebhookConfiguration selects on it (objectSelector), so writes of
// every other object never reach Reroll. Labels on a workload's metadata roll
// nothing.
const ManagedLabel = plan.ManagedLabel

// WebhookPath returns the path the admission webhook of kind is served on:
// "/mutate-deployment" for the built-in kinds.
func WebhookPath(k workload.Kind) string { return "/mutate-" + controllerName(k) }

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

// admissionHandler is the HTTP handler of r's admission webhook. A request
// over admissionlimit.DefaultMaxBytes is admitted unchanged, with a
// warning, before anything decodes it: the reconciler repairs what the
// write dropped, at the cost of one rollout.
func (r *WorkloadReconciler) admissionHandler() http.Handler {
	h := &webhook.WorkloadAdmission{Kind: r.Kind, Annotations: r.Options.Annotations,
		Namespaces: r.Options.Scope.Namespaces, IgnoredNamespaces: r.Options.Scope.IgnoredNamespaces, Key: r.Options.Key}
	return admissionlimit.Limit(&ctrlwebhook.Admission{Handler: h}, 0, admissionlimit.Allow, "reroll's webhook of "+r.Kind.Name()+"s")
}
