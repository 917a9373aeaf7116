package projection

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/test/controlplane"
)

// startProjectionsWithWebhook runs the Projection controller with the
// admission handler of projected fields on a free local port, with a
// serving certificate the test makes (SAN 127.0.0.1), and registers it for
// widgets in namespace ns, selected by ProjectedLabel, through a
// MutatingWebhookConfiguration of its own deleted when the test ends. It
// returns the handler's URL.
func startProjectionsWithWebhook(t *testing.T, ns string) string {
	t.Helper()
	port, caPEM := startProjectionsServing(t, ns, nil)

	url := "https://127.0.0.1:" + strconv.Itoa(port) + WebhookPath
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "reroll-projected-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "projected.reroll.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{widgetGVK.Group}, APIVersions: []string{"*"}, Resources: []string{"widgets"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{ProjectedLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}},
	}
	create(t, cfg)
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), cfg) })
	return url
}

// startProjectionsServing runs the Projection controller with a webhook
// server on a free local port, with a serving certificate the test makes
// (SAN 127.0.0.1); register, when given, adds handlers to the server first.
// It returns the port and the CA bundle.
func startProjectionsServing(t *testing.T, ns string, register func(webhook.Server)) (int, []byte) {
	t.Helper()
	g := newT(t)
	dir := t.TempDir()
	caPEM := servingCert(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	g.Expect(l.Close()).To(gomega.Succeed())
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	if register != nil {
		register(srv)
	}
	startProjections(t, ns, Options{}, func(mo *ctrl.Options) { mo.WebhookServer = srv })
	return port, caPEM
}

// servingCert writes a self-signed serving certificate for 127.0.0.1 as
// tls.crt and tls.key in dir and returns it in PEM, the CA bundle.
func servingCert(t *testing.T, dir string) []byte {
	t.Helper()
	g := newT(t)
	certPEM, keyPEM, err := controlplane.SelfSigned(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "reroll-projection-webhook-test"},
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600)).To(gomega.Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)).To(gomega.Succeed())
	return certPEM
}

// harborManifest is the Widget "harbor" as its owner's manifest holds it:
// without anything a Projection wrote, at the live resourceVersion, as
// kubectl replace sends it.
func harborManifest(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	w := widget(ns, "harbor", map[string]any{"storage": map[string]any{"s3": map[string]any{"region": "eu-1"}}})
	w.SetResourceVersion(getWidget(t, ns, "harbor").GetResourceVersion())
	return w
}

// projectedFields returns the four fields harbor's Projection writes and
// its label.
func projectedFields(t *testing.T, w *unstructured.Unstructured) map[string]string {
	t.Helper()
	return map[string]string{
		accessKeyPath: field(t, w, accessKeyPath), secretKeyPath: field(t, w, secretKeyPath),
		endpointPath: field(t, w, endpointPath), digestPath: field(t, w, digestPath),
		"label": w.GetLabels()[ProjectedLabel],
	}
}

func TestProjectionWebhook_ReplaceKeepsProjectedFields(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	startProjectionsWithWebhook(t, ns)
	create(t, p)
	want := map[string]string{
		accessKeyPath: "AK1", secretKeyPath: "U0sx", endpointPath: "https://minio.example:9000",
		digestPath: digestOf(p, map[string]string{"secretKey": "SK1"}), "label": "true",
	}
	g.Eventually(func() map[string]string { return projectedFields(t, getWidget(t, ns, "harbor")) }).Should(gomega.Equal(want))
	g.Eventually(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten) }).Should(gomega.HaveLen(1))
	// The API server loads webhook configurations through an informer:
	// wait until a dry-run replace gets the fields back.
	g.Eventually(func() map[string]string {
		w := harborManifest(t, ns)
		g.Expect(k8s.Update(t.Context(), w, client.DryRunAll)).To(gomega.Succeed())
		return projectedFields(t, w)
	}).Should(gomega.Equal(want))
	before := getWidget(t, ns, "harbor")

	// A replace from the manifest: the answer of that very write holds the
	// fields, the spec is unchanged (same generation: the operator sees
	// nothing), and the Projection still owns them, so it sees no rewrite.
	w := harborManifest(t, ns)
	g.Expect(k8s.Update(t.Context(), w)).To(gomega.Succeed())
	g.Expect(projectedFields(t, w)).To(gomega.Equal(want))
	g.Expect(w.GetGeneration()).To(gomega.Equal(before.GetGeneration()))
	_, _, found := rewritten(w, ManagerFor(p.Name), []string{accessKeyPath, secretKeyPath, endpointPath, digestPath})
	g.Expect(found).To(gomega.BeFalse(), "the Projection's field manager owns its fields again: %v", w.GetManagedFields())
	g.Expect(events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten)).To(gomega.HaveLen(1), "the controller did not write")

	// A value the writer sets is its own: only what is missing comes back.
	w = harborManifest(t, ns)
	g.Expect(unstructured.SetNestedField(w.Object, "mine", "spec", "storage", "s3", "accessKey")).To(gomega.Succeed())
	g.Expect(k8s.Update(t.Context(), w)).To(gomega.Succeed())
	got := projectedFields(t, getWidget(t, ns, "harbor"))
	g.Expect(got[accessKeyPath]).To(gomega.Equal("mine"))
	g.Expect(got[secretKeyPath]).To(gomega.Equal(want[secretKeyPath]), "the fields it left out came back")
}

func TestProjectionWebhook_PruneIsNotUndone(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	p.Spec.Prune = true
	startProjectionsWithWebhook(t, ns)
	create(t, p)
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	// Positive check first: the webhook restores this target's fields.
	g.Eventually(func() string {
		w := harborManifest(t, ns)
		g.Expect(k8s.Update(t.Context(), w, client.DryRunAll)).To(gomega.Succeed())
		return field(t, w, accessKeyPath)
	}).Should(gomega.Equal("AK1"))

	// The prune is an apply by the Projection's own field manager: the
	// webhook lets it remove the fields and the label.
	g.Expect(k8s.Delete(t.Context(), p)).To(gomega.Succeed())
	g.Eventually(func() error {
		return k8s.Get(t.Context(), client.ObjectKeyFromObject(p), &rerollv1alpha1.Projection{})
	}).Should(gomega.Satisfy(func(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }))
	w := getWidget(t, ns, "harbor")
	g.Expect(projectedFields(t, w)).To(gomega.Equal(map[string]string{accessKeyPath: "", secretKeyPath: "", endpointPath: "", digestPath: "", "label": ""}))
	g.Expect(field(t, w, "spec.storage.s3.region")).To(gomega.Equal("eu-1"))
}

func TestProjectionWebhook_ForgedReviewLearnsNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	url := startProjectionsWithWebhook(t, ns)
	create(t, p)
	// Positive check first: the cluster's Widget holds the projected value.
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	live := getWidget(t, ns, "harbor")

	// Anything that reaches the port sends an UPDATE of its own making for
	// that Widget: oldObject claims the fields under the Projection's field
	// manager but holds no value (and no label), and the object holds none
	// either.
	old := live.DeepCopy()
	old.SetLabels(nil)
	for _, path := range []string{accessKeyPath, secretKeyPath, endpointPath, digestPath} {
		names, err := ParsePath(path)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		unstructured.RemoveNestedField(old.Object, names...)
	}
	obj := harborManifest(t, ns)
	review := func(old, obj *unstructured.Unstructured, op admissionv1.Operation) admissionv1.AdmissionReview {
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: "forged", Operation: op, Namespace: ns, Name: "harbor",
				Kind:      metav1.GroupVersionKind(widgetGVK),
				Resource:  metav1.GroupVersionResource{Group: widgetGVK.Group, Version: widgetGVK.Version, Resource: "widgets"},
				Object:    runtime.RawExtension{Raw: mustJSON(t, obj)},
				OldObject: runtime.RawExtension{Raw: mustJSON(t, old)},
			},
		})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own server
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		for _, v := range []string{"AK1", "U0sx", "minio.example"} {
			g.Expect(string(answer)).NotTo(gomega.ContainSubstring(v), "no value of the cluster")
		}
		var out admissionv1.AdmissionReview
		g.Expect(json.Unmarshal(answer, &out)).To(gomega.Succeed())
		g.Expect(out.Response).NotTo(gomega.BeNil())
		g.Expect(out.Response.Allowed).To(gomega.BeTrue())
		return out
	}
	g.Expect(review(old, obj, admissionv1.Update).Response.Patch).To(gomega.BeEmpty())
	g.Expect(review(nil, obj, admissionv1.Create).Response.Patch).To(gomega.BeEmpty())

	// What the request holds is all it gets back: a value in oldObject.
	g.Expect(unstructured.SetNestedField(old.Object, "forged-value", "spec", "storage", "s3", "accessKey")).To(gomega.Succeed())
	patch := string(review(old, obj, admissionv1.Update).Response.Patch)
	g.Expect(patch).To(gomega.ContainSubstring("forged-value"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if u, ok := v.(*unstructured.Unstructured); ok && u == nil {
		return nil
	}
	b, err := json.Marshal(v)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return b
}
