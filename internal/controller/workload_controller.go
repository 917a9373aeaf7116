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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
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
	// ReasonInvalidAnnotation is a Warning Event: an opt-in annotation is
	// malformed; the rest of the workload's annotations still apply.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonRollFailed is a Warning Event: the write that rolls the workload
	// failed; Reroll retries with backoff.
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
	// CoalesceWindow is how long a change to a ConfigMap or Secret waits
	// before its workloads are reconciled, so that changes arriving within
	// it roll each workload once (--coalesce-window). 0 reconciles at once.
	// Events of the workload itself are never delayed. See enqueueCoalesced.
	CoalesceWindow time.Duration
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
}

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile compares the data the workload consumes with what Reroll
// recorded in ObservedAnnotation and writes, in one patch, the new record
// and, when a consumed key changed, the rollout trigger. It is level-triggered:
// the result depends only on the current workload and objects, never on which
// event caused the call. It returns an error (and the request is retried with
// backoff) only when reading or writing the API fails.
func (r *WorkloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
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
		return r.sync(ctx, obj)
	})
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// sync does one pass of Reconcile on obj.
func (r *WorkloadReconciler) sync(ctx context.Context, obj client.Object) error {
	log := ctrl.LoggerFrom(ctx)
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	template := r.Kind.PodTemplate(obj)
	optIn, problems := annotation.Parse(obj.GetAnnotations(), template.Annotations)
	if len(problems) > 0 {
		msg := errors.Join(problems...).Error()
		log.Info("Ignoring malformed annotations", "error", msg)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring malformed annotations: %s", strings.ReplaceAll(msg, "\n", "; "))
	}

	desired := obj.DeepCopyObject().(client.Object)
	if !optIn.Enabled() {
		// Opted out: forget the record, so that opting in again starts from
		// first sight instead of rolling for changes made in between.
		if _, ok := obj.GetAnnotations()[ObservedAnnotation]; !ok {
			return nil
		}
		annotations := desired.GetAnnotations()
		delete(annotations, ObservedAnnotation)
		desired.SetAnnotations(annotations)
		return r.patch(ctx, obj, desired)
	}

	refs := consumed(optIn, template)
	cur := observed{}
	sha1s := map[string]string{}
	for _, ref := range refs {
		data, err := r.read(ctx, obj.GetNamespace(), ref)
		if err != nil {
			return err
		}
		if data == nil {
			cur[ref.ID()] = nil
			continue
		}
		cur[ref.ID()] = observe(ref, data.Keys)
		sha1s[ref.ID()] = data.ReloaderSHA1
	}

	prev, err := parseObserved(obj.GetAnnotations()[ObservedAnnotation])
	if err != nil {
		// A damaged record cannot say what changed; start again from first
		// sight rather than guess and roll by mistake.
		log.Info("Replacing unreadable record", "error", err.Error())
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, "%s; recording the current state without a rollout", err.Error())
	}

	var rolled []change
	if prev != nil {
		for _, c := range diff(refs, prev, cur) {
			if (c.created && !r.Options.ReloadOnCreate) || (c.deleted && !r.Options.ReloadOnDelete) {
				log.V(1).Info("Not rolling for create or delete", "change", c.String())
				continue
			}
			rolled = append(rolled, c)
		}
	}

	desiredTemplate := r.Kind.PodTemplate(desired)
	if len(rolled) > 0 {
		r.setTrigger(desiredTemplate, cur, rolled, sha1s)
	}
	annotations := desired.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ObservedAnnotation] = cur.String()
	desired.SetAnnotations(annotations)

	if err := r.patch(ctx, obj, desired); err != nil {
		if len(rolled) > 0 && !apierrors.IsConflict(err) {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRollFailed, "Could not roll after %s: %s", describe(rolled), err.Error())
		}
		return err
	}
	switch {
	case len(rolled) > 0:
		note := fmt.Sprintf("Rolled after %s", describe(rolled))
		log.Info("Rolled workload", "changes", describe(rolled), "strategy", string(r.Options.Strategy))
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonRolled, "%s", note)
	case prev == nil:
		log.Info("Recorded consumed data on first sight", "references", len(refs))
	}
	return nil
}

// consumed returns the references that decide the workload's rollouts: every
// reference of the pod template when auto is on, and every explicitly listed
// object, read with the keys the template consumes or, when the template does
// not reference it, as a whole (Reloader rolls on any change of a listed
// object).
func consumed(optIn annotation.OptIn, template *corev1.PodTemplateSpec) []reference.Reference {
	fromTemplate := reference.FromPodTemplate(template)
	byID := make(map[string]reference.Reference, len(fromTemplate))
	for _, ref := range fromTemplate {
		byID[ref.ID()] = ref
	}
	var out []reference.Reference
	seen := map[string]bool{}
	add := func(ref reference.Reference) {
		if !seen[ref.ID()] {
			seen[ref.ID()] = true
			out = append(out, ref)
		}
	}
	if optIn.Auto {
		for _, ref := range fromTemplate {
			add(ref)
		}
	}
	for kind, names := range map[reference.Kind][]string{reference.ConfigMap: optIn.ConfigMaps, reference.Secret: optIn.Secrets} {
		for _, name := range names {
			ref, ok := byID[string(kind)+"/"+name]
			if !ok {
				ref = reference.Reference{Kind: kind, Name: name, All: true}
			}
			add(ref)
		}
	}
	return out
}

// read returns the digests of a referenced object from the cache, or nil when
// it does not exist.
func (r *WorkloadReconciler) read(ctx context.Context, namespace string, ref reference.Reference) (*digest.Data, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if ref.Kind == reference.Secret {
		obj = &corev1.Secret{}
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	d, _ := digest.Of(obj)
	return &d, nil
}

// setTrigger writes the rollout trigger of the configured strategy into the
// pod template.
func (r *WorkloadReconciler) setTrigger(t *corev1.PodTemplateSpec, cur observed, rolled []change, sha1s map[string]string) {
	switch r.Options.Strategy {
	case trigger.EnvVars:
		for _, c := range rolled {
			ctr := trigger.EnvVarContainer(t, c.ref)
			if ctr == nil {
				continue
			}
			// A deleted object has no data; Reloader's hash of no data is
			// the SHA-1 of the empty string.
			value := sha1s[c.ref.ID()]
			if c.deleted {
				value = digest.ReloaderSHA1OfSecret(nil)
			}
			trigger.SetEnv(ctr, trigger.EnvVarName(c.ref.Kind, c.ref.Name), value)
		}
	default:
		trigger.SetConfigHash(t, cur.configHash())
	}
}

// patch writes the difference between obj and desired as a strategic merge
// patch guarded by obj's resourceVersion, so a concurrent change to the
// workload makes it fail with a conflict instead of being overwritten.
func (r *WorkloadReconciler) patch(ctx context.Context, obj, desired client.Object) error {
	if equality.Semantic.DeepEqual(obj, desired) {
		return nil
	}
	p := client.StrategicMergeFrom(obj, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, desired, p, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", r.Kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func describe(changes []change) string {
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}
