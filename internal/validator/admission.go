package validator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/go-logr/logr"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/admissionlimit"
	"github.com/reroll/reroll/internal/validate"
)

// ContentAdmissionPath is the path of the content admission webhook on the
// manager's webhook server: the validating webhook of ConfigMap and Secret
// writes, apart from the workload admission webhook (/mutate-<kind>).
const ContentAdmissionPath = "/validate-content"

// contentAdmissionMaxBytes bounds an AdmissionReview of the content
// admission webhook: an UPDATE holds the object and its oldObject, each up
// to the API server's 1 MiB of data, which JSON's escapes (\u003c for <)
// may make several times larger.
const contentAdmissionMaxBytes = 16 << 20

// maxDenyFindings bounds the findings a refusal's message lists.
const maxDenyFindings = 10

// ContentAdmission is the handler of the content admission webhook: it
// checks a ConfigMap or Secret being created or updated against the rules
// of the Validators that select it and whose admission is Warn or Deny. A
// finding of a Deny rule refuses the write with the findings (Validator,
// rule, key and what is wrong; never a Secret's value); a finding of a Warn
// rule admits it with an admission warning per finding. Rules with
// admission Off are not evaluated here: Reroll's gate still holds the
// rollout of content that fails them.
//
// It reads the Validators from the manager's cache only, so a write that
// no Validator with a Warn or Deny rule selects costs one cached list and
// the decoding of the object's metadata. An UPDATE that keeps the content
// and the labels is admitted unchecked (a finalizer's or an annotation's
// write of an object already invalid must go through).
type ContentAdmission struct {
	// Gate holds the compiled Validators and the clock.
	Gate *Gate
}

// ContentAdmissionHandler returns the HTTP handler of the content
// admission webhook behind the size bound: a review over it is admitted
// with a warning (the gate still holds the rollout), before anything
// decodes it.
func ContentAdmissionHandler(g *Gate) http.Handler {
	return admissionlimit.Limit(&webhook.Admission{Handler: &ContentAdmission{Gate: g}},
		contentAdmissionMaxBytes, admissionlimit.Allow, "reroll's content admission webhook")
}

// Handle answers one AdmissionReview of a ConfigMap or a Secret.
func (a *ContentAdmission) Handle(ctx context.Context, req admission.Request) admission.Response {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" || req.Kind.Group != "" {
		return admission.Allowed("")
	}
	var kind rerollv1.ObjectKind
	switch req.Kind.Kind {
	case "ConfigMap":
		kind = rerollv1.KindConfigMap
	case "Secret":
		kind = rerollv1.KindSecret
	default:
		return admission.Allowed("")
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &meta); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the %s's metadata: %w", kind, err))
	}
	name := meta.Name
	if name == "" {
		name = req.Name
	}
	a.Gate.init()
	vs, _, err := a.Gate.validators(ctx, req.Namespace, kind, name, func(v *validate.Validator) bool {
		return v.Admission() != rerollv1.AdmissionOff
	})
	if err != nil {
		// The failurePolicy of the webhook decides (Ignore by default).
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if len(vs) == 0 {
		return admission.Allowed("")
	}
	obj, err := decodeContent(kind, req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	obj.Namespace, obj.Name = req.Namespace, name
	if req.Operation == admissionv1.Update {
		old, err := decodeContent(kind, req.OldObject.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if maps.Equal(old.Labels, obj.Labels) && equality.Semantic.DeepEqual(old.Data, obj.Data) {
			return admission.Allowed("")
		}
	}
	findings := validate.Evaluate(ctx, vs, obj, a.Gate.now())
	return contentAnswer(kind, req.Namespace, name, findings, ctrl.LoggerFrom(ctx))
}

// decodeContent decodes a ConfigMap or a Secret of an AdmissionReview.
func decodeContent(kind rerollv1.ObjectKind, raw []byte) (validate.Object, error) {
	if kind == rerollv1.KindConfigMap {
		var cm corev1.ConfigMap
		if err := json.Unmarshal(raw, &cm); err != nil {
			return validate.Object{}, fmt.Errorf("decoding the ConfigMap: %w", err)
		}
		return validate.FromConfigMap(&cm), nil
	}
	var s corev1.Secret
	if err := json.Unmarshal(raw, &s); err != nil {
		return validate.Object{}, fmt.Errorf("decoding the Secret: %w", err)
	}
	return validate.FromSecret(&s), nil
}

// contentAnswer is the answer to a write whose content has findings: denied
// with the findings of Deny rules when there is one, else admitted, with a
// warning per finding of a Warn rule. Findings of rules with admission Off
// (evaluated because their Validator has a Warn or Deny rule) are left to
// the gate.
func contentAnswer(kind rerollv1.ObjectKind, namespace, name string, findings []validate.Finding, log logr.Logger) admission.Response {
	var deny, warn []validate.Finding
	for _, f := range findings {
		switch f.Admission {
		case rerollv1.AdmissionDeny:
			deny = append(deny, f)
		case rerollv1.AdmissionWarn:
			warn = append(warn, f)
		}
	}
	warnings := make([]string, 0, len(warn))
	for _, f := range warn {
		warnings = append(warnings, "reroll: "+f.String())
	}
	if len(deny) > 0 {
		log.Info("Refused a write that fails validation", "kind", string(kind), "namespace", namespace, "name", name, "findings", len(deny))
		return admission.Denied(fmt.Sprintf("reroll: %s %s/%s fails validation: %s", kind, namespace, name, validate.Summary(deny, maxDenyFindings))).
			WithWarnings(warnings...)
	}
	if len(warn) > 0 {
		log.Info("Admitted a write that fails validation, with a warning", "kind", string(kind), "namespace", namespace, "name", name, "findings", len(warn))
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// Ensure the handler matches controller-runtime's interface.
var _ admission.Handler = (*ContentAdmission)(nil)
