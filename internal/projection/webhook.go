package projection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reroll/reroll/internal/admissionlimit"
)

// WebhookPath is the path of the admission handler of projected fields on
// the manager's webhook server (--enable-webhook with --enable-projections).
const WebhookPath = "/mutate-projected"

// RegisterWebhook serves the admission handler of projected fields on mgr's
// webhook server at WebhookPath. The handler reads nothing but its
// requests, so it needs no client, cache or RBAC.
func RegisterWebhook(mgr ctrl.Manager) {
	// Over the size bound, a write is admitted unchanged: the fields it
	// drops are written again by the next reconcile.
	mgr.GetWebhookServer().Register(WebhookPath, admissionlimit.Limit(&webhook.Admission{Handler: targetAdmission{}}, 0, admissionlimit.Allow, "reroll's webhook of projected fields"))
}

// targetAdmission is the mutating admission handler of Projection targets,
// of any kind. A replace (kubectl replace, Argo CD Replace=true, helm
// --force) writes the target without the fields Projections wrote; the
// handler puts them back in the same write, from the request's oldObject,
// so that the target's operator never acts on the stripped object. It
// never reads the cluster: its answer holds nothing the request did not.
type targetAdmission struct{}

// Handle never denies a write: on any error it allows it unchanged, with a
// warning, and the Projection controller writes the fields back at its next
// reconcile (at the latest after spec.interval).
func (targetAdmission) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update || req.SubResource != "" {
		return admission.Allowed("")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("resource", req.Resource.Resource, "namespace", req.Namespace, "name", req.Name)
	old, obj := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
		return unchanged(log, fmt.Errorf("decoding the old object: %w", err))
	}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return unchanged(log, fmt.Errorf("decoding the object: %w", err))
	}
	restored, err := restoreProjected(old, obj, requestFieldManager(req.Options.Raw))
	if err != nil {
		return unchanged(log, err)
	}
	if len(restored) == 0 {
		return admission.Allowed("")
	}
	after, err := json.Marshal(obj.Object)
	if err != nil {
		return unchanged(log, fmt.Errorf("encoding the object: %w", err))
	}
	log.V(1).Info("Restored projected fields", "fields", restored)
	return admission.PatchResponseFromRaw(req.Object.Raw, after)
}

func unchanged(log logr.Logger, err error) admission.Response {
	log.Error(err, "Admitting the target unchanged")
	return admission.Allowed("").WithWarnings("reroll: target admitted unchanged: " + err.Error())
}

// requestFieldManager returns the field manager of a write from its
// options (UpdateOptions or PatchOptions, JSON): "" when it names none.
func requestFieldManager(raw []byte) string {
	var o struct {
		FieldManager string `json:"fieldManager"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &o) != nil {
		return ""
	}
	return o.FieldManager
}

// restoreProjected puts back into obj each field that old holds under a
// Projection's field manager ("reroll-projection/<name>", an Apply entry of
// old's managedFields for obj's apiVersion, not of a subresource) and obj
// lacks, and gives that manager its ownership back in obj's managedFields,
// which the API server has already stripped of the removed fields. It
// returns the restored paths in managedFields notation (".spec.a.b").
//
// Left alone: a field obj holds (a value someone set, even a different
// one), a field that is no scalar, a field below a parent obj holds as a
// non-map, and every field of the manager writer, which wrote the request:
// a Projection's own apply and its prune remove fields on purpose. It makes
// no API call.
func restoreProjected(old, obj *unstructured.Unstructured, writer string) ([]string, error) {
	var restored []string
	managed := obj.GetManagedFields()
	changed := false
	for _, e := range old.GetManagedFields() {
		if !strings.HasPrefix(e.Manager, FieldManager+"/") || e.Manager == writer ||
			e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" ||
			e.APIVersion != obj.GetAPIVersion() || e.FieldsV1 == nil {
			continue
		}
		owned := &fieldpath.Set{}
		if err := owned.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("decoding the fields of manager %s: %w", e.Manager, err)
		}
		back := &fieldpath.Set{}
		owned.Leaves().Iterate(func(p fieldpath.Path) {
			names, ok := fieldNames(p)
			if !ok {
				return
			}
			v, found, _ := unstructured.NestedFieldNoCopy(old.Object, names...)
			if !found || !scalar(v) {
				return
			}
			if _, has, _ := unstructured.NestedFieldNoCopy(obj.Object, names...); has {
				return
			}
			if unstructured.SetNestedField(obj.Object, v, names...) != nil {
				// A parent is no map in obj: what the writer put there stays.
				return
			}
			back.Insert(p)
			restored = append(restored, p.String())
		})
		if back.Empty() {
			continue
		}
		var err error
		if managed, err = ownAgain(managed, e, back); err != nil {
			return nil, err
		}
		changed = true
	}
	if changed {
		obj.SetManagedFields(managed)
	}
	return restored, nil
}

// ownAgain returns managed with the fields back added to the Apply entry of
// old's manager, or with that entry re-added (the API server drops an entry
// whose last field a write removed).
func ownAgain(managed []metav1.ManagedFieldsEntry, old metav1.ManagedFieldsEntry, back *fieldpath.Set) ([]metav1.ManagedFieldsEntry, error) {
	for i, e := range managed {
		if e.Manager != old.Manager || e.Operation != old.Operation || e.APIVersion != old.APIVersion || e.Subresource != "" {
			continue
		}
		cur := &fieldpath.Set{}
		if e.FieldsV1 != nil {
			if err := cur.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
				return nil, fmt.Errorf("decoding the fields of manager %s: %w", e.Manager, err)
			}
		}
		raw, err := cur.Union(back).ToJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding the fields of manager %s: %w", e.Manager, err)
		}
		managed[i].FieldsV1 = &metav1.FieldsV1{Raw: raw}
		return managed, nil
	}
	raw, err := back.ToJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the fields of manager %s: %w", old.Manager, err)
	}
	e := *old.DeepCopy()
	e.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	return append(managed, e), nil
}

// fieldNames returns the map keys of p; ok is false when p steps into a
// list (Projections never write there).
func fieldNames(p fieldpath.Path) ([]string, bool) {
	names := make([]string, 0, len(p))
	for _, pe := range p {
		if pe.FieldName == nil {
			return nil, false
		}
		names = append(names, *pe.FieldName)
	}
	return names, len(names) > 0
}

// scalar reports whether v is a JSON scalar (Projections write strings).
func scalar(v any) bool {
	switch v.(type) {
	case string, bool, int64, float64:
		return true
	}
	return false
}

// Ensure the handler matches controller-runtime's interface.
var _ admission.Handler = targetAdmission{}
