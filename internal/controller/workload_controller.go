package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/alert"
	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// FieldManager is the field manager of every write Reroll makes.
const FieldManager = "reroll"

// Event reasons, on the workload.
const (
	// ReasonRolled is a Normal Event: Reroll changed the pod template because
	// consumed data changed. The note names the objects and keys, never values.
	ReasonRolled = "Rolled"
	// ReasonNotRolled is a Normal Event: consumed data changed but the kind
	// does not restart for it (a CronJob's next Job reads it; a finished Job).
	ReasonNotRolled = "NotRolled"
	// ReasonNotified is a Normal Event: with --webhook-url, Reroll posted the
	// change instead of rolling.
	ReasonNotified = "Notified"
	// ReasonPaused and ReasonResumed are Normal Events around a Deployment's
	// pause period.
	ReasonPaused  = "Paused"
	ReasonResumed = "Resumed"
	// ReasonInvalidAnnotation is a Warning Event: an annotation is
	// malformed; the rest of the workload's annotations still apply.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonInvalidWorkload is a Warning Event: the object's pod template
	// cannot be read at the configured path (--workload).
	ReasonInvalidWorkload = "InvalidWorkload"
	// ReasonRollFailed is a Warning Event: the write that rolls the workload,
	// or the webhook call that replaces it, failed; Reroll retries with backoff.
	ReasonRollFailed = "RollFailed"
)

// Options are the behaviours that Reroll's flags choose.
type Options struct {
	// Strategy is how a rollout is triggered (--reload-strategy).
	Strategy trigger.Strategy
	// ReloadOnCreate rolls a workload when a ConfigMap or Secret it references
	// is created after Reroll recorded it as missing (--reload-on-create).
	ReloadOnCreate bool
	// ReloadOnDelete rolls a workload when a ConfigMap or Secret it references
	// is deleted (--reload-on-delete).
	ReloadOnDelete bool
	// Annotations are the annotation names and precedence flags
	// (--auto-reload-all, --resources-to-ignore, the name overrides).
	Annotations annotation.Config
	// Kinds are the workload kinds to handle; nil means the built-in
	// Deployment, StatefulSet and DaemonSet.
	Kinds []workload.Kind
	// IgnoredWorkloads are kinds not to handle, as lower-case plurals
	// ("deployments", "statefulsets", ...; --ignored-workload-types).
	IgnoredWorkloads []string
	// Scope limits the namespaces and objects Reroll sees.
	Scope Scope
	// WebhookURL, when set, receives a POST instead of each rollout
	// (--webhook-url).
	WebhookURL string
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
	// CoalesceWindow is how long a change to a ConfigMap or Secret waits
	// before its workloads are reconciled, so that changes arriving within
	// it roll each workload once (--coalesce-window). 0 reconciles at once.
	// Events of the workload itself are never delayed. See enqueueCoalesced.
	CoalesceWindow time.Duration
	// Admission configures the mutating admission webhook (--enable-webhook);
	// see workload_webhook.go.
	Admission AdmissionOptions
	// EvictOwners are kinds of pod owners whose pods Reroll restarts by
	// eviction (--evict-owner).
	EvictOwners []workload.PodOwner
	// noEviction is set by Setup when Reroll may not list and watch pods
	// or evict them.
	noEviction bool
	// Alerter, when set, is told of every rollout Reroll triggers
	// (ALERT_ON_RELOAD); nil sends no alerts. When it is also a
	// manager.Runnable, Setup adds it to the manager.
	Alerter Alerter
}

// Alerter is told of each rollout after it is made. Alert must return
// quickly and never fail the rollout: it queues, it does not send.
type Alerter interface {
	Alert(ctx context.Context, a alert.Alert)
}

// WorkloadReconciler rolls one kind of workload when data it consumes
// changes.
type WorkloadReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
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
	// notifier posts to Options.WebhookURL; nil without one.
	notifier *notify.Client
	// metrics records rollouts, skips and references; nil records nothing.
	metrics *metrics.Workloads
}

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile compares the data the workload consumes with what Reroll
// recorded in ObservedAnnotation and writes, in one patch, the new record
// and, when a consumed key changed, the rollout trigger. It is level-triggered:
// the result depends only on the current workload and objects, never on which
// event caused the call. It returns an error (and the request is retried with
// backoff) only when reading or writing the API, or the webhook, fails; a
// requeue delay only while a Deployment's pause period runs.
func (r *WorkloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.metrics.Begin(req.NamespacedName)
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if in, err := r.Options.Scope.includes(ctx, r.Client, obj.GetNamespace()); err != nil || !in {
		if err == nil {
			r.metrics.OutOfScope(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if f, ok := r.Kind.(workload.Filter); ok && !f.Handles(obj) {
		return ctrl.Result{}, nil
	}
	var result ctrl.Result
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			// The cache was behind the write that conflicted; read the
			// workload from the API server.
			if err := r.APIReader.Get(ctx, req.NamespacedName, obj); err != nil {
				return err
			}
		}
		first = false
		var err error
		result, err = r.sync(ctx, obj)
		return err
	})
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return result, err
}

// sync does one pass of Reconcile on obj.
func (r *WorkloadReconciler) sync(ctx context.Context, obj client.Object) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	template, err := r.podTemplate(ctx, obj)
	if errors.Is(err, workload.ErrShape) {
		// The object's shape does not match the configured template path:
		// retrying cannot help until the object or the flag changes.
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidWorkload, "%s", err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	optIn, problems := r.Options.Annotations.Parse(obj.GetAnnotations(), template.Annotations)
	mode, modeProblems := r.restartMode(obj)
	problems = append(problems, modeProblems...)
	if len(problems) > 0 {
		msg := strings.ReplaceAll(errors.Join(problems...).Error(), "\n", "; ")
		log.Info("Ignoring malformed annotations", "error", msg)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring malformed annotations: %s", msg)
	}

	desired := obj.DeepCopyObject().(client.Object)
	if !optIn.Enabled() {
		// Opted out: forget the record, so that opting in again starts from
		// first sight instead of rolling for changes made in between, and end
		// a pause Reroll started.
		setAnnotation(desired, ObservedAnnotation, "")
		setAnnotation(desired, eviction.ProgressAnnotation, "")
		r.recordReferences(obj, nil)
		if r.Options.Admission.Enabled {
			setLabel(desired, ManagedLabel, "")
		}
		pause := r.pause(desired, optIn, false, r.now())
		if err := r.patch(ctx, obj, desired); err != nil {
			return ctrl.Result{}, err
		}
		pause.report(ctx, r.Recorder, obj)
		return ctrl.Result{}, nil
	}

	sel, err := r.selectReferences(ctx, obj.GetNamespace(), optIn, template)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.recordReferences(obj, sel.refs)
	if len(sel.missing) > 0 {
		// Wave's rule: nothing happens while a required object or key is
		// missing; the record stays, so the change rolls once it is complete.
		log.Info("Waiting for required references before rolling (Wave dialect)", "missing", strings.Join(sel.missing, ", "))
		return ctrl.Result{}, nil
	}
	cur := sel.observed()
	prev, err := parseObserved(obj.GetAnnotations()[ObservedAnnotation])
	if err != nil {
		// A damaged record cannot say what changed; start again from first
		// sight rather than guess and roll by mistake.
		log.Info("Replacing unreadable record", "error", err.Error())
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, "%s; recording the current state without a rollout", err.Error())
	}

	var rolled []change
	var skip string // why a change was not rolled, for metrics
	if prev != nil {
		for _, c := range diff(sel.refs, prev, cur) {
			if (c.created && !r.Options.ReloadOnCreate) || (c.deleted && !r.Options.ReloadOnDelete) {
				log.V(1).Info("Not rolling for create or delete", "change", c.String())
				skip = skipReason(c)
				continue
			}
			rolled = append(rolled, c)
		}
	}

	setAnnotation(desired, ObservedAnnotation, cur.String())
	if r.Options.Admission.Enabled {
		// The webhook's objectSelector: only managed workloads reach it.
		setLabel(desired, ManagedLabel, "true")
	}
	now := r.now()
	// A workload restarted by eviction keeps its record of the restart
	// under way; one restarted by its template has none, and may have had
	// its template change put back by an operator.
	var reverted *revert.Reverted
	var ev eviction.Decision
	if mode.Evict {
		var c *eviction.Change
		if len(rolled) > 0 && r.notifier == nil {
			c = &eviction.Change{Hash: cur.configHash(), At: now}
		}
		if ev, err = r.decideEviction(ctx, obj, mode, c, now); err != nil {
			return ctrl.Result{}, err
		}
		if len(ev.Evict) > 0 || ev.Done {
			// Evict and finish only from the current record: a cache
			// behind Reroll's last write would evict a pod again or
			// report the end twice. A conflict re-reads the workload.
			if err := r.ensureCurrent(ctx, obj); err != nil {
				return ctrl.Result{}, err
			}
		}
		setAnnotation(desired, eviction.ProgressAnnotation, ev.Progress.String())
	} else {
		setAnnotation(desired, eviction.ProgressAnnotation, "")
		if reverted, err = r.checkRevert(ctx, obj, desired, template, now); err != nil {
			return ctrl.Result{}, err
		}
	}
	byTemplate := !mode.Evict && reverted == nil
	pause := r.pause(desired, optIn, len(rolled) > 0 && r.notifier == nil && byTemplate, now)
	note, skipped := "", false
	switch {
	case len(rolled) > 0 && r.notifier != nil:
		// --webhook-url: report instead of rolling; the record below is
		// written only once the webhook accepted the report, so delivery is
		// at least once. Report only from the current version of the
		// workload, so that a write conflict after the report (which would
		// report again) is unlikely.
		if err := r.ensureCurrent(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.notifier.Post(ctx, r.payload(obj, cur, rolled, sel, now)); err != nil {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not notify after %s: %s", describe(rolled), err.Error())
			r.recordFailure(obj, rolled)
			return ctrl.Result{}, err
		}
		err = r.patch(ctx, obj, desired)
	case len(rolled) > 0 && byTemplate:
		err = r.roll(ctx, obj, desired, optIn, cur, rolled, sel, now, &note, &skipped)
	default:
		// Also a restart by eviction, which starts from the record written
		// here, and a workload whose template change was reverted.
		err = r.patch(ctx, obj, desired)
	}
	if err != nil {
		if len(rolled) > 0 && !apierrors.IsConflict(err) {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not roll after %s: %s", describe(rolled), err.Error())
			r.recordFailure(obj, rolled)
		}
		return ctrl.Result{}, err
	}
	if reverted != nil && r.notifier == nil {
		r.recordOutcome(obj, nil, prev == nil, skip)
	} else {
		r.recordOutcome(obj, rolled, prev == nil, skip)
	}
	switch {
	case len(rolled) > 0 && r.notifier != nil:
		log.Info("Notified webhook instead of rolling", "changes", describe(rolled))
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonNotified, "Notified %s after %s", r.notifier.URL, describe(rolled))
	case len(rolled) > 0 && mode.Evict:
		// The Evicting Event follows, from evict.
		r.alert(ctx, obj, rolled)
	case len(rolled) > 0 && reverted != nil:
		log.Info("Not rolling workload: another field manager reverted its pod template change", "changes", describe(rolled), "manager", reverted.Manager)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonTemplateReverted, "Not rolling after %s: %s put back the pod template Reroll changed. %s", describe(rolled), managerName(reverted.Manager), evictAdvice)
	case len(rolled) > 0 && skipped:
		log.Info("Not rolling workload", "changes", describe(rolled), "reason", note)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonNotRolled, "%s; %s", describe(rolled), note)
	case len(rolled) > 0 && note != "":
		log.Info("Rolled workload", "changes", describe(rolled), "action", note)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonRolled, "Rolled after %s: %s", describe(rolled), note)
		r.alert(ctx, obj, rolled)
	case len(rolled) > 0:
		log.Info("Rolled workload", "changes", describe(rolled), "strategy", string(r.Options.Strategy), "dialect", string(optIn.Dialect))
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonRolled, "Rolled after %s", describe(rolled))
		r.alert(ctx, obj, rolled)
	case prev == nil:
		log.Info("Recorded consumed data on first sight", "references", len(sel.refs))
	}
	pause.report(ctx, r.Recorder, obj)
	if mode.Evict {
		// desired is the workload as written.
		return r.evict(ctx, desired, ev, describe(rolled), now)
	}
	return ctrl.Result{RequeueAfter: pause.requeueAfter}, nil
}

// roll makes the workload pick up the changes: through the kind's own action
// when it has one (workload.Roller), else by writing the trigger into the
// pod template, in the same patch as the record. note receives the action's
// description, if any, and skipped whether the kind chose not to restart.
func (r *WorkloadReconciler) roll(ctx context.Context, obj, desired client.Object, optIn annotation.OptIn, cur observed, rolled []change, sel selection, now time.Time, note *string, skipped *bool) error {
	if roller, ok := r.Kind.(workload.Roller); ok {
		res, err := roller.Roll(ctx, r.Client, workload.Rollout{
			Original: obj, Desired: desired, Hash: cur.configHash(), Now: now, Patch: r.patch,
			SetTrigger: func(t *corev1.PodTemplateSpec) { r.setTrigger(t, optIn, obj.GetNamespace(), cur, rolled, sel, now) },
		})
		if res.Handled {
			*note, *skipped = res.Note, !res.Rolled
			return err
		}
	}
	if optIn.Dialect == annotation.DialectWave {
		h, err := r.waveHash(ctx, obj.GetNamespace(), sel)
		if err != nil {
			return err
		}
		sel.waveHash = h
	}
	t, err := r.Kind.PodTemplate(desired)
	if err != nil {
		return err
	}
	r.setTrigger(t, optIn, obj.GetNamespace(), cur, rolled, sel, now)
	if err := r.Kind.SetPodTemplate(desired, t); err != nil {
		return err
	}
	r.recordPatch(obj, desired, now)
	return r.patch(ctx, obj, desired)
}

// ensureCurrent returns a conflict error, which makes Reconcile re-read the
// workload from the API server, when obj is older than the stored version.
func (r *WorkloadReconciler) ensureCurrent(ctx context.Context, obj client.Object) error {
	cur := r.Kind.New()
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	if cur.GetResourceVersion() != obj.GetResourceVersion() {
		gvk := obj.GetObjectKind().GroupVersionKind()
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: workload.Plural(r.Kind)}, obj.GetName(), errors.New("the cached workload is behind the API server"))
	}
	return nil
}

// podTemplate returns the pod template obj's pods run: its own, or the one
// of the object it refers to (workload.TemplateReader).
func (r *WorkloadReconciler) podTemplate(ctx context.Context, obj client.Object) (*corev1.PodTemplateSpec, error) {
	if tr, ok := r.Kind.(workload.TemplateReader); ok {
		return tr.ReadPodTemplate(ctx, r.Client, obj)
	}
	return r.Kind.PodTemplate(obj)
}

func (r *WorkloadReconciler) now() time.Time {
	if r.Options.Now != nil {
		return r.Options.Now()
	}
	return time.Now()
}

// setTrigger writes the rollout trigger of the configured strategy and the
// workload's dialect into the pod template: Reloader's env var
// (env-vars), Reloader's last-reloaded-from annotation (annotations, Reloader
// dialect) or reroll.dev/config-hash (annotations, Reroll dialect).
func (r *WorkloadReconciler) setTrigger(t *corev1.PodTemplateSpec, optIn annotation.OptIn, namespace string, cur observed, rolled []change, sel selection, now time.Time) {
	switch {
	case optIn.Dialect == annotation.DialectWave:
		// Wave's own output, whatever the strategy.
		trigger.SetAnnotation(t, trigger.WaveHashAnnotation, sel.waveHash)
	case optIn.Dialect == annotation.DialectPodReloader:
		// pod-reloader's own output, whatever the strategy.
		trigger.SetAnnotation(t, trigger.PodReloaderHashAnnotation, digest.PodReloaderHash(sel.podReloader))
	case r.Options.Strategy == trigger.EnvVars:
		for _, c := range rolled {
			if ctr := trigger.EnvVarContainer(t, c.ref); ctr != nil {
				trigger.SetEnv(ctr, trigger.EnvVarName(c.ref.Kind, c.ref.Name), sel.reloaderSHA1(c))
			}
		}
	case optIn.Dialect == annotation.DialectReloader:
		// Reloader rolls once per changed object and the last one's record
		// stays; Reroll rolls once, with the record of the last object in
		// name order.
		c := rolled[len(rolled)-1]
		trigger.SetLastReloadedFrom(t, trigger.ReloadedFrom{
			Type:          strings.ToUpper(string(c.ref.Kind)),
			Name:          c.ref.Name,
			Namespace:     namespace,
			Hash:          sel.reloaderSHA1(c),
			ContainerRefs: c.ref.Containers,
			ObservedAt:    now.Unix(),
		})
	default:
		trigger.SetConfigHash(t, cur.configHash())
	}
}

// payload is the --webhook-url report of a change.
func (r *WorkloadReconciler) payload(obj client.Object, cur observed, rolled []change, sel selection, now time.Time) notify.Payload {
	p := notify.Payload{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Hash: cur.configHash(), ObservedAt: now.Unix()}
	for _, c := range rolled {
		p.Changes = append(p.Changes, notify.Change{
			Kind: string(c.ref.Kind), Name: c.ref.Name, Keys: c.keys,
			Created: c.created, Deleted: c.deleted, Hash: sel.reloaderSHA1(c),
		})
	}
	return p
}

// alert tells Options.Alerter of a rollout, as Reloader's ALERT_ON_RELOAD
// does after each one: the workload and the objects and keys, never values.
func (r *WorkloadReconciler) alert(ctx context.Context, obj client.Object, rolled []change) {
	if r.Options.Alerter == nil {
		return
	}
	a := alert.Alert{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	for _, c := range rolled {
		a.Changes = append(a.Changes, alert.Change{Kind: string(c.ref.Kind), Name: c.ref.Name, Keys: c.keys, Created: c.created, Deleted: c.deleted})
	}
	r.Options.Alerter.Alert(ctx, a)
}

// patch writes the difference between obj and desired as a strategic merge
// patch guarded by obj's resourceVersion, so a concurrent change to the
// workload makes it fail with a conflict instead of being overwritten. It
// does nothing when they do not differ.
func (r *WorkloadReconciler) patch(ctx context.Context, obj, desired client.Object) error {
	if equality.Semantic.DeepEqual(obj, desired) {
		return nil
	}
	// Strategic merge patches merge container and env lists by name; custom
	// resources accept only JSON merge patches, which replace lists whole,
	// safe here because the resourceVersion guards against a lost update. A
	// write of metadata annotations and labels alone (a record, no rollout)
	// merges key by key and needs no guard: without it, the status updates a
	// workload's controller makes cannot turn it into a conflict.
	var opts []client.MergeFromOption
	if !onlyMetadataChanged(obj, desired) {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	var p client.Patch = client.StrategicMergeFrom(obj, opts...)
	if _, ok := obj.(*unstructured.Unstructured); ok {
		p = client.MergeFromWithOptions(obj, opts...)
	}
	if err := r.Client.Patch(ctx, desired, p, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// onlyMetadataChanged reports whether desired differs from obj in metadata
// annotations and labels only.
func onlyMetadataChanged(obj, desired client.Object) bool {
	d := desired.DeepCopyObject().(client.Object)
	d.SetAnnotations(obj.GetAnnotations())
	d.SetLabels(obj.GetLabels())
	return equality.Semantic.DeepEqual(obj, d)
}

// setAnnotation sets a metadata annotation, or removes it when value is "".
func setAnnotation(obj client.Object, key, value string) {
	obj.SetAnnotations(withKey(obj.GetAnnotations(), key, value))
}

// setLabel sets a metadata label, or removes it when value is "".
func setLabel(obj client.Object, key, value string) {
	obj.SetLabels(withKey(obj.GetLabels(), key, value))
}

// withKey returns m with key set to value, or without key when value is "";
// it allocates a map only when m is nil and a value is set.
func withKey(m map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(m, key)
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

func describe(changes []change) string {
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

// emptySHA1 is Reloader's hash of an object without data, used for a deleted
// object.
var emptySHA1 = digest.ReloaderSHA1OfSecret(nil)
