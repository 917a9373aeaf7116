package projection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/store"
)

// FieldManager is the prefix of the server-side apply field manager of every
// write to a target: "reroll-projection/<Projection name>" (ManagerFor). Its
// managedFields entry is how Reroll tells its own fields from another
// writer's; one manager per Projection keeps two Projections of one target
// from removing each other's fields.
const FieldManager = "reroll-projection"

// ManagerFor returns the field manager of Projection name's writes.
func ManagerFor(name string) string { return FieldManager + "/" + name }

// ProjectedLabel is the label every Projection's apply sets to "true" on its
// target, in the same server-side apply and under the same field manager as
// the projected fields, so it goes when the last Projection of the target
// prunes. The admission webhook of projected fields selects on it
// (objectSelector), so writes of every other object never reach Reroll.
const ProjectedLabel = "reroll.dev/projected"

// Finalizer holds a Projection with prune: true until its fields are
// removed from the target.
const Finalizer = "reroll.dev/projection-prune"

// Condition types of a Projection's status.
const (
	// ConditionReady: the Projection works (reason Projected), or why not.
	ConditionReady = "Ready"
	// ConditionSynced: the target holds the sources' current values
	// (Written or UpToDate), or why not.
	ConditionSynced = "Synced"
)

// Options configure the Projection controller; cmd/reroll builds them from
// flags.
type Options struct {
	// DefaultServiceAccount is impersonated for Projections that name no
	// spec.serviceAccountName (--projection-service-account).
	DefaultServiceAccount string
	// Key is the HMAC-SHA-256 key of every digest a Projection writes (in a
	// target or in its status); at least 32 bytes.
	Key []byte
	// Conflict bounds the fight with another writer of a field.
	Conflict ConflictLimits
	// MaxRetry is the longest wait between two reads of a missing target
	// (default 5 minutes).
	MaxRetry time.Duration
	// IgnoreSecrets and IgnoreConfigMaps (--resources-to-ignore) leave that
	// kind unwatched, so that Projections never make Reroll cache objects it
	// was told to ignore; their changes are then seen at each interval.
	IgnoreSecrets, IgnoreConfigMaps bool
	// MinInterval is the shortest spec.interval honoured: a shorter one (the
	// CRD accepts "1ms") is read as MinInterval, since each check costs a GET
	// of the target and of each source as the Projection's ServiceAccount.
	// 0 means DefaultMinInterval.
	MinInterval time.Duration
	// Workers is how many Projections are reconciled at once
	// (--projection-workers), 1 to MaxWorkers; 0 means 1.
	Workers int
	// Fairness is each namespace's budget of Projection reconciles
	// (--namespace-reconcile-rate, --namespace-reconcile-burst): a
	// namespace whose sources change faster waits behind the others (see
	// internal/fairness). The zero value is the defaults.
	Fairness fairness.Options
	// AllowClusterScopedTargets lets a Projection write a cluster-scoped
	// object (--projection-allow-cluster-scoped-targets). Without it such a
	// Projection stops with Ready=False, reason InvalidSpec: a target is
	// an object of the Projection's own namespace.
	AllowClusterScopedTargets bool
	// Store is the ConfigMap and Secret store whose events wake Projections
	// (the workload controller's, shared). Nil makes Setup create one for
	// the kinds not ignored, cluster-wide, digesting under a key derived
	// from Key.
	Store *store.Store
}

// DefaultMinInterval is the default of Options.MinInterval.
const DefaultMinInterval = 30 * time.Second

// MaxWorkers bounds Options.Workers.
const MaxWorkers = 16

// maxClients bounds the impersonating clients kept, one per ServiceAccount
// in use; the least recently used goes first.
const maxClients = 256

// DefaultOptions are the controller's defaults, also those of its flags.
func DefaultOptions() Options {
	return Options{
		DefaultServiceAccount: "default",
		Conflict:              ConflictLimits{Rewrites: 3, Window: 10 * time.Minute},
		MaxRetry:              5 * time.Minute,
	}
}

// Reconciler keeps each Projection's target fields equal to its sources.
// Reads of sources and targets and writes of targets go to the API server
// as the Projection's ServiceAccount; only Projections themselves come
// from the manager's cache.
//
// Reroll's own role holds no access to targets: it only impersonates.
type Reconciler struct {
	// Client reads Projections from the cache and writes their status and
	// finalizer, as Reroll.
	Client client.Client
	// Config is Reroll's client configuration; impersonating clients are
	// made from copies of it.
	Config *rest.Config
	// Scheme and Mapper serve the impersonating clients.
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// Recorder emits core/v1 Events on Projections and targets.
	Recorder record.EventRecorder
	Options  Options

	now     func() time.Time
	metrics *projectionMetrics

	mu sync.Mutex
	// clients are the impersonating clients, by user name, at most
	// maxClients.
	clients *lru.Cache
}

// Reroll's rules for Projections: no access to targets, only impersonation
// of ServiceAccounts (the chart and config/components/projections grant them
// only when Projections are enabled).
// +kubebuilder:rbac:groups=reroll.dev,resources=projections,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=reroll.dev,resources=projections/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=reroll.dev,resources=projections/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile brings one Projection's target up to date and records the
// outcome in its status. Transient failures are returned so the workqueue
// backs off; misconfiguration sets Ready=False and waits for a change.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &rerollv1alpha1.Projection{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx)
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, p)
	}
	if p.Spec.Prune != controllerutil.ContainsFinalizer(p, Finalizer) {
		orig := p.DeepCopy()
		if p.Spec.Prune {
			controllerutil.AddFinalizer(p, Finalizer)
		} else {
			controllerutil.RemoveFinalizer(p, Finalizer)
		}
		// Guarded: a merge patch replaces the whole list of finalizers.
		if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("updating the finalizer: %w", err)
		}
	}

	st := p.Status.DeepCopy()
	out := r.project(ctx, p, st)
	if out.err != nil && out.reason == "" {
		r.metrics.failed("error")
		return ctrl.Result{}, out.err
	}
	r.record(ctx, p, st, out)
	if out.reason != ReasonProjected {
		log.Info("Projection not applied", "projection", req.NamespacedName, "reason", out.reason, "message", out.message)
	}
	return ctrl.Result{RequeueAfter: out.requeue}, nil
}

// outcome is what one reconcile found and did.
type outcome struct {
	// reason and message of the Ready condition (and of Synced, unless the
	// Projection is Ready).
	reason, message string
	// synced is Synced's reason when Ready: Written or UpToDate.
	synced string
	// target is the target as read, for Events; nil when not read.
	target *unstructured.Unstructured
	// written lists the paths written, when this reconcile wrote.
	written []string
	// rewrite, when set, is the conflict record of a rewrite that was
	// written back.
	rewrite *rerollv1alpha1.Conflict
	// requeue is when to reconcile again without a change.
	requeue time.Duration
	// err is a transient error (reason empty) to return.
	err error
}

func fail(reason, message string, requeue time.Duration) outcome {
	return outcome{reason: reason, message: message, requeue: requeue}
}

// project reads the target and the sources and writes the target when a
// value differs; it updates st (status) in place.
func (r *Reconciler) project(ctx context.Context, p *rerollv1alpha1.Projection, st *rerollv1alpha1.ProjectionStatus) outcome {
	now := r.now()
	interval := checkInterval(p.Spec.Interval, r.Options.MinInterval)
	if c := st.Conflict; c != nil && c.StoppedGeneration != 0 {
		if c.StoppedGeneration == p.Generation {
			return fail(ReasonConflict, conflictMessage(c), 0)
		}
		// The spec changed since Reroll stopped: try again.
		st.Conflict = nil
	}
	parsed, err := paths(p.Spec.Fields)
	if err == nil {
		err = checkTemplates(p.Spec)
	}
	if err != nil {
		return fail(ReasonInvalidSpec, err.Error(), 0)
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = r.Options.DefaultServiceAccount
	}
	c, err := r.clientFor(p.Namespace, sa)
	if err != nil {
		return outcome{err: err}
	}

	gv, err := schema.ParseGroupVersion(p.Spec.Target.APIVersion)
	if err != nil {
		return fail(ReasonInvalidSpec, fmt.Sprintf("target apiVersion %q: %v", p.Spec.Target.APIVersion, err), 0)
	}
	gvk := gv.WithKind(p.Spec.Target.Kind)
	missingSince := now
	if cond := meta.FindStatusCondition(st.Conditions, ConditionReady); cond != nil &&
		(cond.Reason == ReasonTargetNotFound || cond.Reason == ReasonTargetKindUnknown) {
		missingSince = cond.LastTransitionTime.Time
	}
	retry := retryAfter(missingSince, now, min(r.Options.MaxRetry, interval))
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return fail(ReasonTargetKindUnknown, fmt.Sprintf("the API server serves no %s; reading it again in %s", gvk, retry), retry)
		}
		return outcome{err: fmt.Errorf("mapping %s: %w", gvk, err)}
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace && !r.Options.AllowClusterScopedTargets {
		return fail(ReasonInvalidSpec, fmt.Sprintf("%s is cluster-scoped; a Projection writes only objects of its own namespace (--projection-allow-cluster-scoped-targets allows more)", gvk.Kind), 0)
	}
	res := mapping.Resource
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Target.Name}, target); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			// Whatever Reroll wrote went with the target; a new one starts
			// with nothing of Reroll's, which is no rewrite by another writer.
			st.Fields = nil
			return fail(ReasonTargetNotFound, fmt.Sprintf("%s %s does not exist; reading it again in %s", gvk.Kind, p.Spec.Target.Name, retry), retry)
		case apierrors.IsForbidden(err):
			return fail(ReasonForbidden, r.forbiddenMessage(err, p.Namespace, sa, "get", res, p.Spec.Target.Name), interval)
		}
		return outcome{err: fmt.Errorf("reading %s %s: %w", gvk.Kind, p.Spec.Target.Name, err)}
	}

	var rewrite *rerollv1alpha1.Conflict
	if path, manager, found := rewritten(target, ManagerFor(p.Name), st.Fields); found {
		rewrite = countRewrite(st.Conflict, path, manager, now, r.Options.Conflict)
		st.Conflict = rewrite
		if int(rewrite.Count) > r.Options.Conflict.Rewrites {
			rewrite.StoppedGeneration = p.Generation
			out := fail(ReasonConflict, conflictMessage(rewrite), 0)
			out.target = target
			return out
		}
	}

	values, out, ok := r.readSources(ctx, c, p, sa, interval)
	if !ok {
		out.target = target
		return out
	}
	// Every digest this Projection writes is bound to it (placeKey).
	key := placeKey(r.Options.Key, p.Namespace, p.Name)
	want, err := desired(p.Spec.Fields, values, key)
	if tl := (*tooLarge)(nil); errors.As(err, &tl) {
		return fail(ReasonTooLarge, err.Error(), interval)
	}
	if err != nil {
		return fail(ReasonInvalidValue, err.Error(), 0)
	}
	names := make([]string, 0, len(p.Spec.Sources))
	for _, s := range p.Spec.Sources {
		names = append(names, s.Name)
	}
	digest := keyedDigest(key, values, names)
	if target.GetLabels()[ProjectedLabel] == "true" && !needsWrite(target, want, parsed, st.Fields) {
		st.SourcesDigest = digest
		return outcome{reason: ReasonProjected, synced: ReasonUpToDate, target: target, rewrite: rewrite, requeue: interval,
			message: fmt.Sprintf("%s %s holds the current values", gvk.Kind, target.GetName())}
	}

	apply := &unstructured.Unstructured{}
	apply.SetGroupVersionKind(gvk)
	apply.SetNamespace(p.Namespace)
	apply.SetName(target.GetName())
	// The resourceVersion makes the apply fail rather than create the
	// target when it was deleted after the read (an apply creates what does
	// not exist), and when it changed since: the next reconcile reads again.
	apply.SetResourceVersion(target.GetResourceVersion())
	apply.SetLabels(map[string]string{ProjectedLabel: "true"})
	written := slices.Sorted(maps.Keys(want))
	for _, path := range written {
		if err := unstructured.SetNestedField(apply.Object, want[path], parsed[path]...); err != nil {
			return fail(ReasonInvalidSpec, fmt.Sprintf("path %s: %v", path, err), 0)
		}
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(ManagerFor(p.Name)), client.ForceOwnership); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return fail(ReasonForbidden, r.forbiddenMessage(err, p.Namespace, sa, "patch", res, target.GetName()), interval)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			return fail(ReasonInvalidValue, fmt.Sprintf("the API server refused the write to %s %s: %s", gvk.Kind, target.GetName(), refusal(err)), interval)
		}
		return outcome{err: fmt.Errorf("applying %s %s: %w", gvk.Kind, target.GetName(), redacted{err})}
	}
	st.Fields = written
	st.SourcesDigest = digest
	t := metav1.NewTime(now)
	st.LastWriteTime = &t
	return outcome{reason: ReasonProjected, synced: ReasonWritten, target: target, written: written, rewrite: rewrite, requeue: interval,
		message: fmt.Sprintf("wrote %s to %s %s", strings.Join(written, ", "), gvk.Kind, target.GetName())}
}

// readSources reads every source's current value from the API server as the
// ServiceAccount. ok is false when one cannot be read; out says why.
func (r *Reconciler) readSources(ctx context.Context, c client.Client, p *rerollv1alpha1.Projection, sa string, interval time.Duration) (map[string]sourceValue, outcome, bool) {
	values := make(map[string]sourceValue, len(p.Spec.Sources))
	for _, s := range p.Spec.Sources {
		ref, obj, res := s.SecretKeyRef, client.Object(&corev1.Secret{}), "secrets"
		if ref == nil {
			ref, obj, res = s.ConfigMapKeyRef, &corev1.ConfigMap{}, "configmaps"
		}
		if ref == nil {
			return nil, fail(ReasonInvalidSpec, fmt.Sprintf("source %s: set secretKeyRef or configMapKeyRef", s.Name), 0), false
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, obj)
		switch {
		case apierrors.IsForbidden(err):
			return nil, fail(ReasonForbidden, r.forbiddenMessage(err, p.Namespace, sa, "get", schema.GroupVersionResource{Version: "v1", Resource: res}, ref.Name), interval), false
		case apierrors.IsNotFound(err):
			if !ref.Optional {
				return nil, fail(ReasonSourceNotFound, fmt.Sprintf("source %s: %s %s does not exist", s.Name, strings.TrimSuffix(res, "s"), ref.Name), interval), false
			}
			values[s.Name] = sourceValue{}
			continue
		case err != nil:
			return nil, outcome{err: fmt.Errorf("reading source %s: %w", s.Name, err)}, false
		}
		v, found := keyOf(obj, ref.Key)
		if !found && !ref.Optional {
			return nil, fail(ReasonSourceNotFound, fmt.Sprintf("source %s: %s %s has no key %s", s.Name, strings.TrimSuffix(res, "s"), ref.Name, ref.Key), interval), false
		}
		values[s.Name] = sourceValue{value: v, present: found}
	}
	return values, outcome{}, true
}

// redacted hides the message of an error from a write of projected values:
// the API server, or an admission webhook, may quote the values in it, and
// the message reaches logs and Events. It keeps the status reason and code.
type redacted struct{ err error }

func (e redacted) Error() string {
	return fmt.Sprintf("%s (HTTP %d; message withheld: it may quote projected values)", apierrors.ReasonForError(e.err), statusCode(e.err))
}

func (e redacted) Unwrap() error { return e.err }

func statusCode(err error) int32 {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return 0
}

// refusal describes an Invalid or BadRequest answer by the fields and the
// kinds of their faults, never by the values, which the API server quotes.
func refusal(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil || len(st.Status().Details.Causes) == 0 {
		return string(apierrors.ReasonForError(err))
	}
	var parts []string
	for _, c := range st.Status().Details.Causes {
		parts = append(parts, fmt.Sprintf("%s (%s)", c.Field, c.Type))
	}
	return strings.Join(parts, ", ")
}

// keyOf returns the value of key in a Secret's data or a ConfigMap's data
// or binaryData.
func keyOf(obj client.Object, key string) ([]byte, bool) {
	switch o := obj.(type) {
	case *corev1.Secret:
		v, ok := o.Data[key]
		return v, ok
	case *corev1.ConfigMap:
		if v, ok := o.Data[key]; ok {
			return []byte(v), true
		}
		v, ok := o.BinaryData[key]
		return v, ok
	}
	return nil, false
}

// forbiddenMessage names what the ServiceAccount may not do; when Reroll
// itself may not impersonate it, it says so instead.
func (r *Reconciler) forbiddenMessage(err error, ns, sa, verb string, res schema.GroupVersionResource, name string) string {
	if strings.Contains(err.Error(), "cannot impersonate") {
		return fmt.Sprintf("Reroll may not impersonate ServiceAccount %s/%s: its role needs impersonate on serviceaccounts", ns, sa)
	}
	return forbidden(ns, sa, verb, res.Resource, res.Group, name)
}

// record writes the outcome into the status, emits the Events and updates
// the metrics.
func (r *Reconciler) record(ctx context.Context, p *rerollv1alpha1.Projection, st *rerollv1alpha1.ProjectionStatus, out outcome) {
	log := ctrl.LoggerFrom(ctx)
	prevReady := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: out.reason, Message: out.message, ObservedGeneration: p.Generation}
	synced := metav1.Condition{Type: ConditionSynced, Status: metav1.ConditionFalse, Reason: out.reason, Message: out.message, ObservedGeneration: p.Generation}
	if out.reason == ReasonProjected {
		ready.Status, ready.Message = metav1.ConditionTrue, "projecting "+p.Spec.Target.Kind+" "+p.Spec.Target.Name
		synced.Status, synced.Reason = metav1.ConditionTrue, out.synced
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.SetStatusCondition(&st.Conditions, synced)
	st.ObservedGeneration = p.Generation

	if out.rewrite != nil && out.reason == ReasonProjected {
		msg := fmt.Sprintf("field manager %q rewrote %s (%d in the window); wrote it back", out.rewrite.Manager, out.rewrite.Path, out.rewrite.Count)
		r.Recorder.Event(p, corev1.EventTypeWarning, ReasonRewritten, msg)
	}
	switch {
	case out.written != nil:
		r.Recorder.Event(p, corev1.EventTypeNormal, ReasonWritten, out.message)
		r.Recorder.Eventf(out.target, corev1.EventTypeNormal, ReasonWritten, "Projection %s wrote %s", p.Name, strings.Join(out.written, ", "))
		r.metrics.wrote()
	case out.reason != ReasonProjected:
		r.metrics.failed(out.reason)
		// One Warning per change of reason, not one per retry.
		if prevReady == nil || prevReady.Reason != out.reason {
			r.Recorder.Event(p, corev1.EventTypeWarning, out.reason, out.message)
			if out.reason == ReasonConflict && out.target != nil {
				r.Recorder.Eventf(out.target, corev1.EventTypeWarning, ReasonConflict, "Projection %s stopped writing: %s", p.Name, out.message)
			}
		}
	}
	r.metrics.set(client.ObjectKeyFromObject(p), out.reason == ReasonProjected)

	if equalStatus(&p.Status, st) {
		return
	}
	orig := p.DeepCopy()
	p.Status = *st
	if err := r.Client.Status().Patch(ctx, p, client.MergeFrom(orig)); err != nil {
		// The next reconcile (the interval, or the watch) records it again.
		log.Error(err, "Could not update the Projection's status", "projection", client.ObjectKeyFromObject(p))
	}
}

// equalStatus reports whether two statuses say the same, ignoring condition
// timestamps (SetStatusCondition keeps them when nothing else changed).
func equalStatus(a, b *rerollv1alpha1.ProjectionStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration &&
		slices.EqualFunc(a.Conditions, b.Conditions, func(x, y metav1.Condition) bool {
			return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
		}) &&
		a.LastWriteTime.Equal(b.LastWriteTime) && a.SourcesDigest == b.SourcesDigest &&
		slices.Equal(a.Fields, b.Fields) &&
		((a.Conflict == nil) == (b.Conflict == nil)) && (a.Conflict == nil || *a.Conflict == *b.Conflict)
}

// finalize removes the fields a Projection with prune: true wrote, then its
// finalizer. When the fields cannot be removed because the target or the
// ServiceAccount's rights are gone (a namespace being deleted removes
// both), a Warning says so and the Projection goes anyway: a finalizer
// that waits for what cannot come back would block the namespace forever.
func (r *Reconciler) finalize(ctx context.Context, p *rerollv1alpha1.Projection) error {
	if !controllerutil.ContainsFinalizer(p, Finalizer) {
		return nil
	}
	if err := r.prune(ctx, p); err != nil {
		var gone *permanent
		if !errors.As(err, &gone) {
			return err
		}
		r.Recorder.Event(p, corev1.EventTypeWarning, ReasonPruneFailed, err.Error())
	}
	orig := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, Finalizer)
	// Guarded: a merge patch replaces the whole list of finalizers.
	if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}

// permanent marks a prune failure that retrying cannot fix.
type permanent struct{ err error }

func (e *permanent) Error() string { return e.err.Error() }
func (e *permanent) Unwrap() error { return e.err }

// prune applies an empty configuration under the Projection's field manager: server-side
// apply then removes every field only Reroll owned.
func (r *Reconciler) prune(ctx context.Context, p *rerollv1alpha1.Projection) error {
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = r.Options.DefaultServiceAccount
	}
	c, err := r.clientFor(p.Namespace, sa)
	if err != nil {
		return err
	}
	gv, err := schema.ParseGroupVersion(p.Spec.Target.APIVersion)
	if err != nil {
		return &permanent{err}
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gv.WithKind(p.Spec.Target.Kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.Target.Name}, target); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
			return &permanent{fmt.Errorf("pruning %s %s: %w", p.Spec.Target.Kind, p.Spec.Target.Name, err)}
		}
		return fmt.Errorf("pruning %s %s: %w", p.Spec.Target.Kind, p.Spec.Target.Name, err)
	}
	apply := &unstructured.Unstructured{}
	apply.SetGroupVersionKind(target.GroupVersionKind())
	apply.SetNamespace(p.Namespace)
	apply.SetName(target.GetName())
	apply.SetResourceVersion(target.GetResourceVersion())
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(ManagerFor(p.Name)), client.ForceOwnership); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return &permanent{fmt.Errorf("pruning %s %s: %w", p.Spec.Target.Kind, p.Spec.Target.Name, redacted{err})}
		}
		return fmt.Errorf("pruning %s %s: %w", p.Spec.Target.Kind, p.Spec.Target.Name, redacted{err})
	}
	r.Recorder.Event(p, corev1.EventTypeNormal, ReasonPruned, fmt.Sprintf("removed %s from %s %s", strings.Join(p.Status.Fields, ", "), p.Spec.Target.Kind, p.Spec.Target.Name))
	r.Recorder.Eventf(target, corev1.EventTypeNormal, ReasonPruned, "Projection %s removed %s", p.Name, strings.Join(p.Status.Fields, ", "))
	return nil
}

// clientFor returns an uncached client that acts as the ServiceAccount sa
// of ns (impersonation), kept for the maxClients ServiceAccounts used
// last.
// Nothing it reads is kept.
func (r *Reconciler) clientFor(ns, sa string) (client.Client, error) {
	user := "system:serviceaccount:" + ns + ":" + sa
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clients == nil {
		r.clients = lru.New(maxClients)
	}
	if c, ok := r.clients.Get(user); ok {
		return c.(client.Client), nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: r.Scheme, Mapper: r.Mapper})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", user, err)
	}
	r.clients.Add(user, c)
	return c, nil
}
