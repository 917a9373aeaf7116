package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reroll/reroll/internal/apply"
	"github.com/reroll/reroll/internal/changeset"
	"github.com/reroll/reroll/internal/coalesce"
	"github.com/reroll/reroll/internal/compact"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/firstsight"
	"github.com/reroll/reroll/internal/idlegc"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/observe"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/rollout"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/workload"
)

// FieldManager is the field manager of every write Reroll makes.
const FieldManager = workload.FieldManager

// ObservedAnnotation is the workload metadata annotation where Reroll
// records what it last saw of the data the workload consumes; see
// plan.RecordAnnotation.
const ObservedAnnotation = plan.RecordAnnotation

// KeyAnnotation names the digest key of the record; see plan.KeyAnnotation.
const KeyAnnotation = plan.KeyAnnotation

// Event reasons, on the workload; plan.Reason* document them.
const (
	ReasonRolled            = plan.ReasonRolled
	ReasonNotRolled         = plan.ReasonNotRolled
	ReasonNotified          = plan.ReasonNotified
	ReasonPaused            = plan.ReasonPaused
	ReasonResumed           = plan.ReasonResumed
	ReasonInvalidAnnotation = plan.ReasonInvalidAnnotation
	ReasonInvalidWorkload   = plan.ReasonInvalidWorkload
	ReasonRollFailed        = plan.ReasonRollFailed
)

// PlanOptions are the options of the planner, embedded in Options.
type PlanOptions = plan.Options

// Options are the behaviours that Reroll's flags choose.
type Options struct {
	// PlanOptions are the planner's options (plan.Options: the strategy,
	// create and delete rollouts, the annotation names, the notification
	// endpoint, the rollout bound, waits and pauses, the digest key, the
	// installation time), built once from the flags and passed to
	// plan.Decide as they are. Setup sets Managed (from Admission) and
	// NoEviction (when restarts by eviction are off or not permitted).
	PlanOptions
	// Validate checks the new content of a change against the Validators
	// (reroll.dev/v1alpha1) of its namespace before anything rolls for it
	// (--enable-validation); content that fails a rule holds the rollout
	// (internal/validator). Without the Validator CRD it is off.
	Validate bool
	// Kinds are the workload kinds to handle; nil means the built-in
	// Deployment, StatefulSet and DaemonSet.
	Kinds []workload.Kind
	// IgnoredWorkloads are kinds not to handle, as lower-case plurals
	// ("deployments", "statefulsets", ...; --ignored-workload-types).
	IgnoredWorkloads []string
	// Scope limits the namespaces and objects Reroll sees.
	Scope scope.Scope
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
	// CoalesceWindow is the quiet time after the latest change to any
	// ConfigMap or Secret a workload consumes before the workload is
	// reconciled, so that a burst of changes rolls each workload
	// once (--coalesce-window). 0 reconciles at once.
	// Events of the workload itself are not delayed, except while a burst
	// of its objects is held (see Reconcile and coalesce.Handler).
	CoalesceWindow time.Duration
	// CoalesceMaxWait bounds how long a burst of changes can hold a
	// workload back (--coalesce-max-wait): each change restarts the
	// CoalesceWindow wait, up to this long after the burst's first change.
	// 0 means DefaultCoalesceMaxWait; a value below CoalesceWindow means
	// CoalesceWindow.
	CoalesceMaxWait time.Duration
	// MaxConcurrentReconciles is how many workloads of one kind are
	// reconciled at once (--max-concurrent-reconciles); 0 means
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Fairness is each namespace's budget of reconciles of one kind
	// (--namespace-reconcile-rate, --namespace-reconcile-burst): a
	// namespace over it waits behind the others (see internal/fairness).
	// The zero value is the defaults.
	Fairness fairness.Options
	// FirstPass, when set, is told of each controller Setup registers
	// (idlegc.FirstPass.Queue): it closes once each has drained its queue
	// after its start, the end of the start-up's first sight of every
	// cached workload.
	FirstPass *idlegc.FirstPass
	// InitialList, when set, is where the cache's transform takes the
	// compact form of the workloads it holds (compact.Blocks: from arrays
	// while on, until the cache has synced; cmd/reroll); nil allocates
	// each by itself.
	InitialList *compact.Blocks
	// Admission configures the mutating admission webhook (--enable-webhook);
	// see internal/webhook.
	Admission AdmissionOptions
	// JobJournal is the ConfigMap, in Reroll's own namespace, that keeps the
	// manifest of each Job being re-created between its delete and its
	// create (--job-journal); an empty Name keeps it in memory only, and a
	// crash in between loses the Job.
	JobJournal types.NamespacedName
	// PodRecords is the ConfigMap, in Reroll's own namespace, where Reroll
	// keeps the record of each group of annotated pods whose owner it does
	// not handle (--pod-records; see annotatedPods); an empty Name turns
	// their restart by eviction off, since it has no durable record then.
	PodRecords types.NamespacedName
	// Store is the cache of ConfigMaps and Secrets (internal/store). Nil
	// makes Setup create one from StoreOptions and add it to the manager;
	// pass one to share it (the Projection controller, the readiness check).
	Store *store.Store
	// EvictOwners are kinds of pod owners whose pods Reroll restarts by
	// eviction (--evict-owner); read only with PodEviction.
	EvictOwners []workload.PodOwner
	// ChangeSets are Reroll's own namespace and the prefix of the
	// ConfigMaps that keep the halt record of each change set the circuit
	// breaker halted, one per set (--change-sets, internal/halts); an empty
	// Name turns safe delivery (waves, bake time, the breaker) off.
	ChangeSets types.NamespacedName
	// ChangeSetWindow is how long after a change set's first member was
	// seen its later waves wait for members to join (--change-set-window);
	// 0 means delivery.DefaultWindow.
	ChangeSetWindow time.Duration
	// BakeTime is how long a wave's rollouts stay healthy before the next
	// wave starts, for workloads that set no reroll.dev/bake-time
	// (--bake-time).
	BakeTime time.Duration
	// HaltAfterFailedRollouts halts a change set once this many of its
	// rollouts failed (--halt-after-failed-rollouts); 0 turns the breaker
	// off.
	HaltAfterFailedRollouts int
	// Storm is the storm breaker (--storm-max-rollouts, --storm-period): a
	// workload rolled more often within the period is held; a zero Max is
	// off.
	Storm safe.Storm
	// PodEviction turns on restarts by eviction (--enable-pod-eviction):
	// reroll.dev/restart: evict, EvictOwners and annotated pods
	// (PodRecords). Only then does Reroll watch and cache pods, and need
	// list and watch on pods and create on pods/eviction. Off, a workload
	// that asks for a restart by eviction gets an EvictionDisabled Warning
	// Event and is never restarted.
	PodEviction bool
	// Alerter, when set, is told of every rollout Reroll triggers
	// (ALERT_ON_RELOAD); nil sends no alerts. When it is also a
	// manager.Runnable, Setup adds it to the manager.
	Alerter Alerter
	// LegacyRecordsUntil is the migration deadline of the legacy digest
	// scheme (state.LoadLegacyRecordsUntil): records that name it are compared
	// under it only before then. The zero time compares none.
	LegacyRecordsUntil time.Time
	// creations, when set (tests), is the first-sight memory every kind
	// shares; nil gives each kind its own.
	creations *firstsight.Memory
	// Baselines is the name prefix, in Reroll's own namespace, of the
	// ConfigMaps (one per namespace) where PlanOptions.DeferRecord keeps the baselines
	// it must keep durably (state.Baselines); an empty Name keeps none there.
	Baselines types.NamespacedName
}

// Alerter is told of each rollout after it is made. Alert must return
// quickly and never fail the rollout: it queues, it does not send.
type Alerter = apply.Alerter

// WorkloadReconciler rolls one kind of workload when data it consumes
// changes.
type WorkloadReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// informers is the cache Client reads from, whose indexes the map
	// functions read directly (index.Cache); nil lists through Client
	// instead.
	informers cache.Informers
	// APIReader reads from the API server directly; used only to re-read a
	// workload after a write conflict, when the cache may be behind.
	APIReader client.Reader
	// Recorder emits core/v1 Events on the workload. The events.k8s.io
	// recorder is not used: it folds Events that differ only in their note
	// into one series, which would hide which keys each rollout was for.
	Recorder record.EventRecorder
	// Kind is the workload kind this reconciler handles.
	Kind workload.Kind
	// Options are the behaviours chosen by flags.
	Options Options
	// observe are what the gather step reads through (internal/observe);
	// apply is the write step, the only writer (internal/apply). Both are
	// built by Setup for r's kind.
	observe *observe.Deps
	apply   *apply.Applier
	// metrics records rollouts, skips and references; nil records nothing.
	metrics *metrics.Workloads
	// rollouts counts running and waiting rollouts across kinds for the
	// concurrent rollout bound; shared by every kind's reconciler.
	rollouts *rollout.Tracker
	// slotFreed carries requests to reconcile workloads of r's kind that
	// wait for a slot (rollout.Tracker.WakeOldest); nil for kinds not
	// counted. notified carries the wake-ups of the notifications that
	// ended (apply.Notifications); nil without an endpoint.
	slotFreed chan event.GenericEvent
	notified  chan event.GenericEvent
	// readNamespaces is true when Reroll may watch Namespaces, whose
	// annotations set rollout windows and bounds.
	readNamespaces bool
	// changeSets are safe delivery's change sets; nil when it is off
	// (Options.ChangeSets).
	changeSets *changeset.Sets
	// journal keeps the manifests of Jobs being re-created (Jobs only; nil
	// without Options.JobJournal).
	journal *state.JobJournal
	// creations orders the workloads' creations seen on the watch against
	// the store's changes, for the first-sight rule; nil orders by seconds.
	creations *firstsight.Memory
	// coalesce is the debounce of the ConfigMap and Secret watches; a
	// rollout waits while it holds the workload, and Reconcile asks it
	// first (Debouncer.Admit).
	coalesce *coalesce.Debouncer
	// ownWrites notes r's writes of settled plans, whose watch events are
	// not reconciled again (apply.OwnWrites).
	ownWrites *apply.OwnWrites
}

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile compares the data the workload consumes with what Reroll
// recorded in ObservedAnnotation and writes, in one patch, the new record
// and, when a consumed key changed, the rollout trigger (sync: gather,
// decide, write). A restart by eviction writes the workload a second time,
// once its pods are evicted (see write). It is level-triggered: the result
// depends only on the current workload and objects, never on which event
// caused the call. It returns an error (and the request is retried with
// backoff) only when reading or writing the API, or the notification
// endpoint, fails; a requeue delay while something is due later (a pause
// period, a deferred rollout, a notification on its way, an eviction).
func (r *WorkloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := r.coalesce.Admit(req)
	if !a.Run {
		// A burst of data changes is being coalesced, and the debouncer
		// adds this request when it ends (within --coalesce-max-wait).
		// Reconciling now, for an update of the workload itself (most
		// often the write of Reroll's previous rollout), would roll for
		// each write of the burst: 8 writers of one Secret gave one
		// Deployment up to 56 rollouts a minute.
		return ctrl.Result{RequeueAfter: a.Wait}, nil
	}
	r.metrics.Begin(req.NamespacedName)
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.Forget(req.NamespacedName)
			r.apply.Notifications.Drop(req.NamespacedName)
			if r.journal != nil {
				// A Job Reroll deleted and could not create again yet.
				return ctrl.Result{}, r.journal.Recover(ctx, req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if in, err := r.Options.Scope.Includes(ctx, r.Client, obj.GetNamespace()); err != nil || !in {
		if err == nil {
			r.metrics.OutOfScope(req.NamespacedName)
			r.creations.Forget(obj.GetUID())
		}
		return ctrl.Result{}, err
	}
	if f, ok := r.Kind.(workload.Filter); ok && !f.Handles(obj) {
		r.creations.Forget(obj.GetUID())
		return ctrl.Result{}, nil
	}
	var result ctrl.Result
	first := true
	err := retry.OnError(retry.DefaultRetry, retryable, func() error {
		if !first {
			// The cache was behind the write that conflicted, or holds no
			// kubectl last-applied-configuration (digest.Transform drops it)
			// so that the record planned did not fit; read the workload from
			// the API server.
			if err := r.APIReader.Get(ctx, req.NamespacedName, obj); err != nil {
				return err
			}
		}
		first = false
		var err error
		result, err = r.sync(ctx, obj, a.Ended)
		return err
	})
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return result, err
}

// retryable reports whether a write is worth deciding again from the API
// server's copy of the workload: a conflict, or annotations refused as too
// long (plan.Decide sizes the record by the annotations it sees).
func retryable(err error) bool {
	var status *apierrors.StatusError
	if apierrors.IsConflict(err) || !errors.As(err, &status) || status.ErrStatus.Details == nil {
		return apierrors.IsConflict(err)
	}
	for _, c := range status.ErrStatus.Details.Causes {
		if c.Type == metav1.CauseType(field.ErrorTypeTooLong) && c.Field == "metadata.annotations" {
			return true
		}
	}
	return false
}

// sync is one pass of Reconcile on obj: gather (observe.Workload, and
// observe.View), decide (plan.Decide, pure), write (apply.Applier.Apply,
// the only writer). burstEnded is true when the debouncer started this
// reconcile (coalesce.Admission.Ended): the coalescing of the workload's
// objects is over, and nothing holds its rollout again.
func (r *WorkloadReconciler) sync(ctx context.Context, obj client.Object, burstEnded bool) (ctrl.Result, error) {
	if obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	in, opts, err := observe.Workload(ctx, r.observe, obj, burstEnded)
	if errors.Is(err, workload.ErrShape) {
		return ctrl.Result{}, r.apply.InvalidShape(obj, err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	bounded := opts.Bounded(in) && r.rollouts != nil
	if bounded {
		// Count, decide and write as one step, so that two reconciles
		// cannot both take the last slot.
		r.rollouts.Lock()
		defer r.rollouts.Unlock()
		if in.Rollouts, err = r.rollouts.Count(ctx, r.Client, obj, plan.PendingSince(opts.Key, string(obj.GetUID()), obj.GetAnnotations(), in.Now), in.Now, r.namespaceBound(opts)); err != nil {
			return ctrl.Result{}, err
		}
	}
	p, err := plan.Decide(opts, in, observe.View(ctx, r.observe, obj, in.Now))
	if err != nil {
		return ctrl.Result{}, err
	}
	if !bounded && r.rollouts != nil && p.PinsQuietly() {
		// An opt-in pin counts against the bound even where rollouts for
		// a change do not (plan.DefaultOptInPins): decided again with the
		// counts, under the lock. Only such a plan pays for the second
		// decision, so a fan-out of changes is not serialized.
		r.rollouts.Lock()
		defer r.rollouts.Unlock()
		if in.Rollouts, err = r.rollouts.Count(ctx, r.Client, obj, plan.PendingSince(opts.Key, string(obj.GetUID()), obj.GetAnnotations(), in.Now), in.Now, r.namespaceBound(opts)); err != nil {
			return ctrl.Result{}, err
		}
		if p, err = plan.Decide(opts, in, observe.View(ctx, r.observe, obj, in.Now)); err != nil {
			return ctrl.Result{}, err
		}
		bounded = true
	}
	return r.apply.Apply(ctx, obj, p, apply.Written{Bounded: bounded, Progress: in.Progress, Timeout: opts.RolloutTimeout, Now: in.Now})
}

// namespaceBound reads a namespace's bound on concurrent rollouts for the
// Tracker's count: opts.NamespaceBound of its annotations (a malformed
// annotation is ignored here; its own workloads' Events report it).
func (r *WorkloadReconciler) namespaceBound(opts plan.Options) rollout.NamespaceBound {
	return func(ctx context.Context, namespace string) (int, error) {
		a, err := r.observe.NamespaceAnnotations(ctx, namespace)
		if err != nil {
			return 0, err
		}
		b, _ := opts.NamespaceBound(a)
		return b, nil
	}
}

func (r *WorkloadReconciler) now() time.Time {
	if r.Options.Now != nil {
		return r.Options.Now()
	}
	return time.Now()
}
