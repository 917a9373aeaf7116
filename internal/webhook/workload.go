package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/reroll/reroll/internal/annotation"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// TemplateTriggers are the pod template annotations of every dialect's
// trigger; the webhook restores them when a write drops them.
var TemplateTriggers = []string{
	trigger.ConfigHashAnnotation,
	trigger.LastReloadedFromAnnotation,
	trigger.PodReloaderHashAnnotation,
	trigger.WaveHashAnnotation,
}

// EnvVarPrefix starts the name of every env var trigger (Reloader's
// env-vars strategy).
const EnvVarPrefix = "STAKATER_"

// WorkloadAdmission is the mutating admission handler of one workload kind.
// A replace (kubectl replace, Argo CD Replace=true, helm --force) writes the
// workload without the fields Reroll added; without the handler the pod
// template loses the trigger and the workload rolls once. The handler puts
// the fields back in the same write, from the request's oldObject only, and
// labels a new opted-in workload. It never reads the cluster: its answer
// holds nothing the request did not. The controller serves one per kind
// (internal/controller registers it on the manager's webhook server).
type WorkloadAdmission struct {
	// Kind is the workload kind the handler admits.
	Kind workload.Kind
	// Annotations are the annotation names and precedence flags that say
	// whether a workload opted in (the reconciler's).
	Annotations annotation.Config
	// Namespaces, when not empty, are the only namespaces whose new
	// workloads get plan.ManagedLabel (--namespaces); IgnoredNamespaces
	// never get it (--namespaces-to-ignore).
	Namespaces, IgnoredNamespaces []string
	// Key is the installation key: only state Reroll signed under it is
	// put back (restoreState).
	Key digest.Key
}

// Handle never denies a write: on any error it allows it unchanged, with a
// warning, and the reconciler repairs what the write lost (at the cost of
// the rollout the webhook exists to spare).
func (h *WorkloadAdmission) Handle(ctx context.Context, req admission.Request) admission.Response {
	log := ctrl.LoggerFrom(ctx).WithValues("kind", h.Kind.Name(), "namespace", req.Namespace, "name", req.Name, "operation", string(req.Operation))
	resp, err := h.handle(ctx, req)
	if err != nil {
		log.Error(err, "Admitting workload unchanged")
		return admission.Allowed("").WithWarnings(fmt.Sprintf("reroll: workload admitted unchanged: %s", err.Error()))
	}
	if len(resp.Patches) > 0 {
		log.V(1).Info("Restored Reroll's fields", "patches", len(resp.Patches))
	}
	return resp
}

func (h *WorkloadAdmission) handle(ctx context.Context, req admission.Request) (admission.Response, error) {
	obj, err := h.decode(req.Object.Raw)
	if err != nil {
		return admission.Response{}, err
	}
	// A create may leave the namespace to the request's.
	obj.SetNamespace(req.Namespace)
	// The patch is the difference between two encodings of the same typed
	// object, so it holds only what the handler changed: fields that the Go
	// types do not know (a newer API server's) are never removed.
	before, err := json.Marshal(obj)
	if err != nil {
		return admission.Response{}, fmt.Errorf("encoding the object: %w", err)
	}
	switch req.Operation {
	case admissionv1.Update:
		old, err := h.decode(req.OldObject.Raw)
		if err != nil {
			return admission.Response{}, err
		}
		if err := h.restore(old, obj); err != nil {
			return admission.Response{}, err
		}
		if fieldManager(req) != workload.FieldManager {
			// Not Reroll's own write (which renames pinned references,
			// or unpins them): keep the copies a re-apply names the
			// sources of.
			if err := h.keepPins(old, obj); err != nil {
				return admission.Response{}, err
			}
		}
	case admissionv1.Create:
		if err := h.label(obj); err != nil {
			return admission.Response{}, err
		}
	default:
		return admission.Allowed(""), nil
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return admission.Response{}, fmt.Errorf("encoding the object: %w", err)
	}
	return admission.PatchResponseFromRaw(before, after), nil
}

// replaceKept are the state annotations of safe delivery that a replace
// must not reset: the workload's part of its change sets (a Failed in it is
// what the circuit breaker counts) and the times of its latest rollouts
// (what the storm breaker counts).
var replaceKept = []string{safe.MemberAnnotation, safe.RolloutsAnnotation}

// restoreState copies replaceKept from old to obj, when obj lacks them and
// old's value is signed by Reroll, for a write that also dropped the record
// (a replace with a manifest that never held Reroll's fields). A write
// that keeps the record and drops one of them is Reroll's own or an
// operator's on purpose (kubectl reroll resume removes reroll.dev/rollouts;
// Reroll removes a forged value), and stands. A forged value is not put
// back.
func (h *WorkloadAdmission) restoreState(old, obj client.Object) {
	for _, k := range replaceKept {
		if _, has := obj.GetAnnotations()[k]; has {
			continue
		}
		if _, ok := plan.Verified(h.Key, string(old.GetUID()), k, old.GetAnnotations()); ok {
			workload.SetAnnotation(obj, k, old.GetAnnotations()[k])
		}
	}
}

func (h *WorkloadAdmission) decode(raw []byte) (client.Object, error) {
	obj := h.Kind.New()
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", h.Kind.Name(), err)
	}
	return obj, nil
}

// restore copies from old to obj each field Reroll manages that old has and
// obj lacks; a value obj carries is never overwritten. It makes no API call.
//
// The record and plan.ManagedLabel come back only while obj is opted in: the
// reconciler removes both from a workload that opted out, and that write
// passes through here too; restoring them would undo it.
func (h *WorkloadAdmission) restore(old, obj client.Object) error {
	oldT, err := h.Kind.PodTemplate(old)
	if err != nil {
		return err
	}
	t, err := h.Kind.PodTemplate(obj)
	if err != nil {
		return err
	}
	if optIn, _ := h.Annotations.Parse(obj.GetAnnotations(), t.Annotations); optIn.Enabled() {
		// The record only, which Reroll removes from an opted-out workload
		// alone. The state annotations (pending,
		// rolled-at, eviction, template-patch, reverted) are never put back:
		// the webhook cannot tell a replace that dropped them from Reroll's
		// own clean-up, and restoring the latter kept a rollout long done
		// in the bound's queue and a pause period long over in force. A
		// replace that drops them costs at most a deferred change's place
		// in the queue (the record still holds the change, so it rolls).
		_, hadRecord := obj.GetAnnotations()[plan.RecordAnnotation]
		for _, k := range []string{plan.RecordAnnotation, plan.KeyAnnotation} {
			if v, ok := old.GetAnnotations()[k]; ok {
				if _, has := obj.GetAnnotations()[k]; !has {
					workload.SetAnnotation(obj, k, v)
				}
			}
		}
		if !hadRecord {
			h.restoreState(old, obj)
		}
		if v, ok := old.GetLabels()[plan.ManagedLabel]; ok {
			if _, has := obj.GetLabels()[plan.ManagedLabel]; !has {
				workload.SetLabel(obj, plan.ManagedLabel, v)
			}
		}
	}
	changed := false
	for _, k := range TemplateTriggers {
		v, ok := oldT.Annotations[k]
		if _, has := t.Annotations[k]; !ok || has {
			continue
		}
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[k] = v
		changed = true
	}
	for _, oc := range oldT.Spec.Containers {
		c := container(t, oc.Name)
		if c == nil {
			continue
		}
		for _, e := range oc.Env {
			if strings.HasPrefix(e.Name, EnvVarPrefix) && !hasEnv(c, e.Name) {
				c.Env = append(c.Env, e)
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	return h.Kind.SetPodTemplate(obj, t)
}

// keepPins puts back, in obj's pod template, the references to copies
// (versioned config, pin.TemplateAnnotation) that old's named and obj's
// names the sources of, with old's pin.TemplateAnnotation: what a GitOps
// tool's re-apply of the original manifest (which names the sources)
// drops, so that a server-side diff or dry-run apply shows no drift and
// the pods do not flicker to the source and back. A server-side apply keeps
// the annotation (Reroll owns it) and replaces the references; a replace
// drops both. A template whose annotation differs from old's (kubectl
// rollout undo to another pinned revision) is left as it is; only the
// names old's template both lists in its annotation and references come
// back.
func (h *WorkloadAdmission) keepPins(old, obj client.Object) error {
	oldT, err := h.Kind.PodTemplate(old)
	if err != nil {
		return err
	}
	t, err := h.Kind.PodTemplate(obj)
	if err != nil {
		return err
	}
	v := oldT.Annotations[pin.TemplateAnnotation]
	if nv, has := t.Annotations[pin.TemplateAnnotation]; v == "" || has && nv != v {
		// Another pinning (kubectl rollout undo to an older revision):
		// the writer's.
		return nil
	}
	pins, err := pin.ParsePins(v)
	if err != nil {
		return nil
	}
	cms, secrets := pin.Referenced(&oldT.Spec)
	renames := map[pin.Ref]string{}
	for src, copyName := range pins {
		named := cms
		if src.Kind == reference.Secret {
			named = secrets
		}
		if slices.Contains(named, copyName) {
			renames[src] = copyName
		}
	}
	if pin.Rewrite(&t.Spec, renames) == 0 {
		return nil
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[pin.TemplateAnnotation] = v
	return h.Kind.SetPodTemplate(obj, t)
}

// fieldManager is the field manager of the write under review (its
// UpdateOptions' or PatchOptions'), "" when it names none.
func fieldManager(req admission.Request) string {
	var o struct {
		FieldManager string `json:"fieldManager"`
	}
	if len(req.Options.Raw) == 0 || json.Unmarshal(req.Options.Raw, &o) != nil {
		return ""
	}
	return o.FieldManager
}

func container(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	return nil
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// label sets plan.ManagedLabel on a new opted-in workload, so that the writes
// that follow its creation reach the webhook before the reconciler first
// labels it. It reads only the request: the answer to a CREATE carries
// nothing of the cluster's state (no record, no digest, no Secret name), so
// that anything able to reach the webhook's port learns nothing by sending
// it an AdmissionReview. The reconciler records the new workload on first
// sight, as a metadata patch that rolls nothing. Out-of-scope namespaces by
// --namespaces or --namespaces-to-ignore are left alone; the namespace
// selector is not read (a label on an out-of-scope workload changes
// nothing).
func (h *WorkloadAdmission) label(obj client.Object) error {
	if len(h.Namespaces) > 0 && !slices.Contains(h.Namespaces, obj.GetNamespace()) ||
		slices.Contains(h.IgnoredNamespaces, obj.GetNamespace()) {
		return nil
	}
	if f, ok := h.Kind.(workload.Filter); ok && !f.Handles(obj) {
		return nil
	}
	t, err := h.Kind.PodTemplate(obj)
	if err != nil {
		return err
	}
	if optIn, _ := h.Annotations.Parse(obj.GetAnnotations(), t.Annotations); optIn.Enabled() {
		workload.SetLabel(obj, plan.ManagedLabel, "true")
	}
	return nil
}

// Ensure the handler matches controller-runtime's interface.
var _ admission.Handler = (*WorkloadAdmission)(nil)
