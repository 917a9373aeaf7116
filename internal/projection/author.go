package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/admissionlimit"
)

// AuthorWebhookPath is the path of the admission handler that checks a
// Projection's author on the manager's webhook server (--enable-webhook
// with --enable-projections).
const AuthorWebhookPath = "/validate-projection-author"

// RegisterAuthorWebhook serves the author check at AuthorWebhookPath. c
// creates SubjectAccessReviews (Reroll's role needs create on
// subjectaccessreviews); defaultServiceAccount is
// Options.DefaultServiceAccount.
func RegisterAuthorWebhook(mgr ctrl.Manager, c client.Client, defaultServiceAccount string) {
	// Over the size bound, a Projection is refused: this webhook fails
	// closed.
	mgr.GetWebhookServer().Register(AuthorWebhookPath, admissionlimit.Limit(
		&webhook.Admission{Handler: authorAdmission{c: c, defaultSA: defaultServiceAccount}}, 0, admissionlimit.Deny, "reroll's Projection author webhook"))
}

// authorAdmission admits a Projection only when its author may impersonate
// the ServiceAccount it names (or the default one), since Reroll acts as
// that ServiceAccount for it: without the check, anyone who may write a
// Projection could make Reroll act as any ServiceAccount of the namespace.
// Kubernetes' edit and admin roles hold impersonate on serviceaccounts.
// An update of the spec is checked too, even one that keeps the
// ServiceAccount: whoever may edit a Projection another author made would
// otherwise choose what Reroll reads and writes as that ServiceAccount. An
// update that keeps the spec (Reroll's finalizer writes, labels) is
// admitted unchecked; status is a subresource, never checked.
type authorAdmission struct {
	c         client.Client
	defaultSA string
}

func (a authorAdmission) Handle(ctx context.Context, req admission.Request) admission.Response {
	review, answer := authorReview(req, a.defaultSA)
	if review == nil {
		return answer
	}
	sa := review.Spec.ResourceAttributes.Name
	if err := a.c.Create(ctx, review); err != nil {
		// Fail closed: the check is the only thing between the author and
		// the ServiceAccount.
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("checking whether %s may impersonate ServiceAccount %s/%s: %w", req.UserInfo.Username, req.Namespace, sa, err))
	}
	if !review.Status.Allowed {
		return admission.Denied(fmt.Sprintf("%s may not impersonate ServiceAccount %s/%s, which Reroll would act as for this Projection (spec.serviceAccountName); grant impersonate on serviceaccounts/%s, as the edit and admin roles do", req.UserInfo.Username, req.Namespace, sa, sa))
	}
	return admission.Allowed("")
}

// authorReview decides what a request needs, from the request alone: the
// SubjectAccessReview to ask (whether the request's user may impersonate
// the ServiceAccount the Projection names, or defaultSA), or, when that is
// nil, the answer (allowed without a check, or an error for a request
// that does not decode). The request is the author's input: any bytes.
func authorReview(req admission.Request, defaultSA string) (*authorizationv1.SubjectAccessReview, admission.Response) {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		return nil, admission.Allowed("")
	}
	var p, old rerollv1alpha1.Projection
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the Projection: %w", err))
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = defaultSA
	}
	if req.Operation == admissionv1.Update {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old Projection: %w", err))
		}
		if equality.Semantic.DeepEqual(old.Spec, p.Spec) {
			return nil, admission.Allowed("")
		}
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, Groups: req.UserInfo.Groups, UID: req.UserInfo.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: req.Namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: sa,
		},
	}}, admission.Response{}
}
