package projection

import (
	"strconv"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// The security review: a Projection's author could name any ServiceAccount
// of the namespace, with no check that the author could act as it. The
// author check admits a Projection only when its author may impersonate the
// ServiceAccount it names (or the default one).
func TestProjectionAuthor_MustBeAllowedToImpersonateTheServiceAccount(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	// The reviews go out as the plane's admin: the chart grants Reroll
	// create on subjectaccessreviews with the webhook and Projections.
	port, caPEM := startProjectionsServing(t, ns, func(srv webhook.Server) {
		srv.Register(AuthorWebhookPath, &webhook.Admission{Handler: authorAdmission{c: k8s, defaultSA: "default"}})
	})
	url := "https://127.0.0.1:" + strconv.Itoa(port) + AuthorWebhookPath
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "reroll-projection-author-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "projection-author.reroll.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{rerollv1alpha1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"projections"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](10),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	create(t, cfg)
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), cfg) })

	writeProjections := rbacv1.PolicyRule{APIGroups: []string{rerollv1alpha1.GroupVersion.Group}, Resources: []string{"projections"}, Verbs: []string{"create", "get", "update"}}
	author := func(user string, rules ...rbacv1.PolicyRule) client.Client {
		create(t,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: rules},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			})
		rc := rest.CopyConfig(plane.Config)
		rc.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := client.New(rc, client.Options{Scheme: scheme})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return c
	}
	alice := author("alice", writeProjections,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"projector"}, Verbs: []string{"impersonate"}})
	mallory := author("mallory", writeProjections)

	// Positive control: an author who may act as the ServiceAccount.
	g.Eventually(func() error { return alice.Create(t.Context(), p.DeepCopy()) }).Should(gomega.Succeed())

	for name, sa := range map[string]string{"named": "projector", "default": ""} {
		q := p.DeepCopy()
		q.Name, q.Spec.ServiceAccountName = "mallory-"+name, sa
		g.Expect(mallory.Create(t.Context(), q)).To(gomega.MatchError(gomega.ContainSubstring("mallory may not impersonate ServiceAccount")), name)
	}
	// edit reads alice's Projection as c, changes it and updates it as c,
	// reading it again after a conflict: the controller writes the
	// Projection's status meanwhile.
	edit := func(c client.Client, change func(*rerollv1alpha1.Projection)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var mine rerollv1alpha1.Projection
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &mine); err != nil {
				return err
			}
			change(&mine)
			return c.Update(t.Context(), &mine)
		})
	}
	// Nor may she change the ServiceAccount of alice's Projection.
	g.Expect(edit(mallory, func(mine *rerollv1alpha1.Projection) { mine.Spec.ServiceAccountName = "default" })).
		To(gomega.MatchError(gomega.ContainSubstring("may not impersonate")))
	// Nor change what it reads or writes as alice's ServiceAccount, keeping
	// the ServiceAccount (the third review's Low); alice may.
	steal := func(mine *rerollv1alpha1.Projection) {
		mine.Spec.Sources = append(mine.Spec.Sources, *mine.Spec.Sources[0].DeepCopy())
		mine.Spec.Sources[len(mine.Spec.Sources)-1].Name = "stolen"
	}
	g.Expect(edit(mallory, steal)).To(gomega.MatchError(gomega.ContainSubstring("mallory may not impersonate")))
	g.Expect(edit(alice, steal)).To(gomega.Succeed(), "the author who may act as the ServiceAccount edits the spec")
	// A write that keeps the spec (labels, Reroll's finalizer) needs no check.
	g.Expect(edit(mallory, func(mine *rerollv1alpha1.Projection) { mine.Labels = map[string]string{"team": "a"} })).To(gomega.Succeed())
}
