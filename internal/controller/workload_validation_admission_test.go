package controller

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/validate"
	"github.com/reroll/reroll/internal/validator"
)

// warnings records the admission warnings the API server returns to a
// client.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// warningClient is an admin client whose warnings w records.
func warningClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return c, w
}

// startRerollWithContentWebhook runs Reroll with validation on and its
// webhook server on a free local port (a certificate the test makes), and
// registers the content admission webhook as the chart does (ConfigMaps
// and Secrets, CREATE and UPDATE, failurePolicy Ignore), in namespace ns
// only. It returns once a dry-run create of a ConfigMap in ns reaches the
// handler.
func startRerollWithContentWebhook(t *testing.T, ns string) *admissionServer {
	t.Helper()
	g := newT(t)
	dir := t.TempDir()
	caPEM := writeServingCert(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	g.Expect(l.Close()).To(gomega.Succeed())
	srv := &admissionServer{Server: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})}
	opts := validationOptions(t)
	opts.Admission.Enabled = true
	startRerollWith(t, plane.Config, ns, opts, func(mo *ctrl.Options) { mo.WebhookServer = srv })

	url := "https://127.0.0.1:" + strconv.Itoa(port) + validator.ContentAdmissionPath
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "reroll-content-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "content.reroll.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps", "secrets"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	create(t, cfg)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cfg) })
	// The API server loads webhook configurations through an informer.
	g.Eventually(func() int64 {
		g.Expect(k8s.Create(t.Context(), configMap(ns, "webhook-probe", nil), client.DryRunAll)).To(gomega.Succeed())
		return srv.pathRequests(validator.ContentAdmissionPath)
	}).Should(gomega.BeNumerically(">", 0), "the content admission webhook is called")
	return srv
}

// admissionValidator is a Validator in ns whose rule "config-json" wants
// key config.json of the kind's object name to be JSON, with the given
// admission action.
func admissionValidator(ns, name string, kind rerollv1alpha1.ObjectKind, object string, action rerollv1alpha1.AdmissionAction) *rerollv1alpha1.Validator {
	return &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: kind, Names: []string{object},
			Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON, Admission: action}}},
	}
}

func TestValidation_TheContentWebhookDeniesInDenyModeAndWarnsInWarnMode(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	srv := startRerollWithContentWebhook(t, ns)
	c, w := warningClient(t)
	vs := []*rerollv1alpha1.Validator{
		admissionValidator(ns, "strict", rerollv1alpha1.KindConfigMap, "strict", rerollv1alpha1.AdmissionDeny),
		admissionValidator(ns, "lenient", rerollv1alpha1.KindConfigMap, "lenient", rerollv1alpha1.AdmissionWarn),
		admissionValidator(ns, "quiet", rerollv1alpha1.KindConfigMap, "quiet", rerollv1alpha1.AdmissionOff),
		admissionValidator(ns, "creds", rerollv1alpha1.KindSecret, "creds", rerollv1alpha1.AdmissionDeny),
	}
	vs[0].Spec.Names = append(vs[0].Spec.Names, "strict-new")
	for _, v := range vs {
		create(t, v)
	}
	for _, v := range vs {
		g.Eventually(readyCondition(t, v)).Should(gomega.HaveField("Reason", validate.CondCompiled))
	}
	const invalid = `{"level": "warn",}`

	// Deny. Valid content is written, without a warning.
	strict := configMap(ns, "strict", map[string]string{"config.json": `{"level": "info"}`})
	before := srv.pathRequests(validator.ContentAdmissionPath)
	g.Expect(c.Create(t.Context(), strict)).To(gomega.Succeed())
	g.Expect(srv.pathRequests(validator.ContentAdmissionPath)).To(gomega.BeNumerically(">", before), "the webhook saw the write")
	g.Expect(w.take()).To(gomega.BeEmpty())
	// Invalid content is refused with the rule's message, and the
	// ConfigMap keeps what it held.
	strict.Data["config.json"] = invalid
	err := c.Update(t.Context(), strict)
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "denied: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring(`reroll: ConfigMap ` + ns + `/strict fails validation: strict/config-json: key "config.json" is not valid JSON`))
	g.Expect(get(t, configMap(ns, "strict", nil)).Data).To(gomega.HaveKeyWithValue("config.json", `{"level": "info"}`))
	// A create is refused too.
	err = c.Create(t.Context(), configMap(ns, "strict-new", map[string]string{"config.json": invalid}))
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "denied: %v", err)
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "strict-new"}, &corev1.ConfigMap{})).To(gomega.Satisfy(apierrors.IsNotFound))
	// An object no Validator selects is written as it is.
	g.Expect(c.Create(t.Context(), configMap(ns, "unselected", map[string]string{"config.json": invalid}))).To(gomega.Succeed())
	g.Expect(w.take()).To(gomega.BeEmpty())

	// Warn: the write goes through, with a warning naming the rule.
	lenient := configMap(ns, "lenient", map[string]string{"config.json": `{"level": "info"}`})
	g.Expect(c.Create(t.Context(), lenient)).To(gomega.Succeed())
	g.Expect(w.take()).To(gomega.BeEmpty())
	lenient.Data["config.json"] = invalid
	g.Expect(c.Update(t.Context(), lenient)).To(gomega.Succeed())
	g.Expect(w.take()).To(gomega.ConsistOf(gomega.ContainSubstring(`reroll: lenient/config-json: key "config.json" is not valid JSON`)))
	g.Expect(get(t, configMap(ns, "lenient", nil)).Data).To(gomega.HaveKeyWithValue("config.json", invalid))

	// Off: nothing at write time.
	g.Expect(c.Create(t.Context(), configMap(ns, "quiet", map[string]string{"config.json": invalid}))).To(gomega.Succeed())
	g.Expect(w.take()).To(gomega.BeEmpty())

	// A Secret: valid is written; invalid is refused, and the message holds
	// no part of the value.
	g.Expect(c.Create(t.Context(), secret(ns, "creds", map[string]string{"config.json": `{"password": "s3cret-ok"}`}))).To(gomega.Succeed())
	creds := get(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}})
	creds.Data["config.json"] = []byte(`{"password": "hunter2-s3cret",}`)
	err = c.Update(t.Context(), creds)
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "denied: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring(`creds/config-json: key "config.json" is not valid JSON`))
	g.Expect(err.Error()).NotTo(gomega.ContainSubstring("hunter2"))
	g.Expect(err.Error()).NotTo(gomega.ContainSubstring("password"))
	g.Expect(w.take()).To(gomega.BeEmpty())
}
