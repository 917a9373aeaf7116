package projection

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// FuzzAuthorReview feeds the author check's decision any admission
// request a Projection's author can cause: it must never panic, never
// admit a CREATE or an UPDATE that changes the spec without a
// SubjectAccessReview (any change of the spec counts), and the review asks exactly whether the request's
// user may impersonate the named ServiceAccount (or the default one) in
// the request's namespace.
func FuzzAuthorReview(f *testing.F) {
	f.Add(uint8(0), `{"spec":{"serviceAccountName":"deployer"}}`, ``, "team-a", "alice", "")
	f.Add(uint8(1), `{"spec":{"serviceAccountName":"admin"}}`, `{"spec":{"serviceAccountName":"deployer"}}`, "team-a", "alice", "")
	f.Add(uint8(1), `{"spec":{}}`, `{"spec":{}}`, "team-a", "alice", "status")
	f.Add(uint8(1), `{"spec":{"serviceAccountName":"deployer","sources":[{"name":"a"}]}}`, `{"spec":{"serviceAccountName":"deployer"}}`, "team-a", "mallory", "")
	f.Add(uint8(1), `{"metadata":{"finalizers":["x"]},"spec":{"serviceAccountName":"deployer"}}`, `{"spec":{"serviceAccountName":"deployer"}}`, "team-a", "reroll", "")
	f.Add(uint8(0), `{"spec":{"serviceAccountName":1}}`, `null`, "", "", "")
	f.Add(uint8(2), `{`, `{`, "x", "y", "")
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect}
	f.Fuzz(func(t *testing.T, op uint8, object, oldObject, namespace, user, subresource string) {
		const defaultSA = "reroll-default"
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: ops[int(op)%len(ops)], Namespace: namespace, SubResource: subresource,
			Object: runtime.RawExtension{Raw: []byte(object)}, OldObject: runtime.RawExtension{Raw: []byte(oldObject)},
			UserInfo: authenticationv1.UserInfo{Username: user},
		}}
		review, answer := authorReview(req, defaultSA)
		var p, old rerollv1alpha1.Projection
		decoded := json.Unmarshal([]byte(object), &p) == nil
		oldDecoded := json.Unmarshal([]byte(oldObject), &old) == nil
		checked := subresource == "" && decoded && (req.Operation == admissionv1.Create ||
			req.Operation == admissionv1.Update && oldDecoded && !equality.Semantic.DeepEqual(old.Spec, p.Spec))
		if !checked {
			if review != nil {
				t.Fatalf("a review for a request that needs none: %+v", req.AdmissionRequest)
			}
			return
		}
		if review == nil {
			t.Fatalf("answered %+v without a review", answer.Result)
		}
		sa := p.Spec.ServiceAccountName
		if sa == "" {
			sa = defaultSA
		}
		a := review.Spec.ResourceAttributes
		if review.Spec.User != user || a.Namespace != namespace || a.Verb != "impersonate" || a.Resource != "serviceaccounts" || a.Group != "" || a.Name != sa {
			t.Fatalf("review %+v of %+v, want user %q impersonate serviceaccounts/%s in %q", review.Spec, a, user, sa, namespace)
		}
	})
}
