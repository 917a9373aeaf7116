//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/validator"
)

// TestManifests_ContentWebhookComponent renders config/default with the
// webhook and content-webhook components, as config/default's comment lists
// them, and checks the content admission webhook against the chart's
// (validation.admission.enabled) and the names in Reroll's args against the
// rendered objects. Then it applies the rendering to the plane and runs the
// binary with the pod's args and ServiceAccount: Reroll must fill in the
// caBundle of reroll-content, and a Validator's Deny rule must refuse an
// invalid ConfigMap write through it, with no request of Reroll's denied.
//
// As in TestHelmChart_WebhookWithSelfSignedCertificates, the plane has no
// pod network: the configuration reaches Reroll by url: at localhost, and
// mountSecret plays the kubelet's Secret volume. Serial: it installs in
// reroll-system, as TestManifests_OneFileInstall does, and the webhook
// sees every ConfigMap and Secret write of the cluster while it runs.
func TestManifests_ContentWebhookComponent(t *testing.T) {
	g := newT(t)
	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS(filepath.Join(root, "config")))).To(gomega.Succeed())
	base := filepath.Join(dir, "default", "kustomization.yaml")
	k, err := os.ReadFile(base)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(os.WriteFile(base, append(k, "components:\n  - ../components/webhook\n  - ../components/content-webhook\n"...), 0o644)).To(gomega.Succeed())
	out, err := run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs := decodeAll(t, out)

	// Rendered: the configuration Reroll's args name, behind the
	// webhook component's Service, as the chart renders it.
	c := container(t, objs)
	args := map[string]string{}
	for _, a := range c.Args {
		if name, value, ok := strings.Cut(a, "="); ok {
			args[name] = value
		}
	}
	g.Expect(c.Args).To(gomega.ContainElements("--enable-webhook", "--content-webhook-configuration-name=reroll-content"))
	g.Expect(args).NotTo(gomega.HaveKey("--enable-validation"), "validation is on by default")
	cfgs := only(objs, "ValidatingWebhookConfiguration")
	g.Expect(cfgs).To(gomega.HaveLen(1))
	rendered := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, cfgs[0])
	g.Expect(rendered.Name).To(gomega.Equal(args["--content-webhook-configuration-name"]))
	g.Expect(rendered.Webhooks).To(gomega.HaveLen(1))
	g.Expect(rendered.Webhooks[0].ClientConfig.Service).To(gomega.Equal(&admissionregistrationv1.ServiceReference{
		Namespace: "reroll-system", Name: args["--webhook-service"], Path: ptr.To(validator.ContentAdmissionPath), Port: ptr.To[int32](443)}))
	chart := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t,
		only(renderChart(t, map[string]any{"webhook.enabled": true, "validation.admission.enabled": true}), "ValidatingWebhookConfiguration")[0])
	// withoutService is a webhook without the Service it calls, whose
	// name and namespace are the release's in the chart.
	withoutService := func(w admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.ValidatingWebhook {
		w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Path: w.ClientConfig.Service.Path, Port: w.ClientConfig.Service.Port}
		return w
	}
	g.Expect(withoutService(rendered.Webhooks[0])).To(gomega.Equal(withoutService(chart.Webhooks[0])), "the chart's webhook")
	var crds []string
	for _, o := range only(objs, "CustomResourceDefinition") {
		crds = append(crds, o.GetName())
	}
	g.Expect(crds).To(gomega.ContainElements("validators.reroll.dev", "clustervalidators.reroll.dev"))
	// The certificate rotation may read every configuration and update
	// its own: the Secret, the mutating and the validating ones.
	g.Expect(boundClusterRules(t, objs, "reroll-system", "reroll-controller")).To(gomega.ContainElements(
		"admissionregistration.k8s.io|validatingwebhookconfigurations|get", "admissionregistration.k8s.io|validatingwebhookconfigurations|list",
		"admissionregistration.k8s.io|validatingwebhookconfigurations|watch", "admissionregistration.k8s.io|validatingwebhookconfigurations|update"))
	for _, kind := range []string{"Role", "ClusterRole"} {
		// The state Role updates only the Job journal (TestHelmChart_DigestKeyRole).
		for _, o := range withoutDigestKeyRole(only(objs, kind)) {
			for _, r := range convert[rbacv1.Role](t, o).Rules {
				if slices.Contains(r.Verbs, "update") {
					g.Expect(r.ResourceNames).To(gomega.ConsistOf(gomega.BeElementOf(args["--webhook-cert-secret"], args["--webhook-configuration-name"], rendered.Name)),
						"%s %s: update only on the Secret and the two configurations", kind, o.GetName())
				}
			}
		}
	}

	// Applied, as `kubectl apply -k` would.
	leftovers := func() []client.Object {
		return []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reroll-system"}}, &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}, ObjectMeta: metav1.ObjectMeta{Name: "validators.reroll.dev"}}}
	}
	waitDeleted(t, true, leftovers()...)
	manifest := filepath.Join(dir, "reroll.yaml")
	g.Expect(os.WriteFile(manifest, []byte(out), 0o644)).To(gomega.Succeed())
	_, err = run(nil, kubectlBin, "--kubeconfig", plane.Kubeconfig, "apply", "--server-side", "-f", manifest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		if _, err := run(nil, kubectlBin, "--kubeconfig", plane.Kubeconfig, "delete", "--wait=false", "--ignore-not-found", "-f", manifest); err != nil {
			t.Errorf("kubectl delete: %v", err)
		}
		// The next serial test may install in reroll-system, or need no
		// Validator CRD.
		waitDeleted(t, false, leftovers()...)
	})
	expectAccess(t, "reroll-system", "reroll-controller",
		[]access{{"watch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ""},
			{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations#reroll-content", ""}},
		[]access{{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ""},
			{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations#other", ""}})

	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	cfgKey := client.ObjectKey{Name: rendered.Name}
	g.Expect(k8s.Get(t.Context(), cfgKey, &cfg)).To(gomega.Succeed())
	g.Expect(cfg.Webhooks).To(gomega.HaveLen(1))
	g.Expect(cfg.Webhooks[0].ClientConfig.CABundle).To(gomega.BeEmpty(), "Reroll fills it in")
	port := freeAddr(t)[len("127.0.0.1:"):]
	cfg.Webhooks[0].ClientConfig.Service = nil
	cfg.Webhooks[0].ClientConfig.URL = ptr.To("https://localhost:" + port + validator.ContentAdmissionPath)
	g.Expect(k8s.Update(t.Context(), &cfg)).To(gomega.Succeed())

	secretKey := client.ObjectKey{Namespace: "reroll-system", Name: args["--webhook-cert-secret"]}
	certDir := t.TempDir()
	mountSecret(t, secretKey, certDir)
	app := newNamespace(t, "e2e-content-", nil)
	kubeconfig, _ := serviceAccountKubeconfig(t, "reroll-system", "reroll-controller")
	p := startReroll(t, kubeconfig, append(podArgs(t, "reroll-system", "reroll-controller"),
		"--webhook-cert-dir="+certDir, "--webhook-port="+port, "--webhook-extra-dns-names=localhost"),
		map[string]string{"POD_NAMESPACE": "reroll-system", "POD_NAME": "reroll-e2e"})

	// The rotation writes its CA into the Secret and into both
	// configurations.
	var ca []byte
	g.Eventually(func() []byte {
		var s corev1.Secret
		g.Expect(k8s.Get(t.Context(), secretKey, &s)).To(gomega.Succeed())
		ca = s.Data["ca.crt"]
		return ca
	}).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() []byte {
		g.Expect(k8s.Get(t.Context(), cfgKey, &cfg)).To(gomega.Succeed())
		return cfg.Webhooks[0].ClientConfig.CABundle
	}).Should(gomega.Equal(ca))
	g.Eventually(func() [][]byte {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: args["--webhook-configuration-name"]}, &m)).To(gomega.Succeed())
		var bundles [][]byte
		for _, w := range m.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		return bundles
	}).Should(gomega.HaveEach(gomega.Equal(ca)))

	// A Deny rule: config.json of app-config must be JSON.
	v := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "reroll.dev/v1alpha1", "kind": "Validator",
		"metadata": map[string]any{"namespace": app, "name": "app-config"},
		"spec": map[string]any{"kind": "ConfigMap", "names": []any{"app-config"}, "rules": []any{
			map[string]any{"name": "config-json", "key": "config.json", "format": "JSON", "admission": "Deny"}}},
	}}
	g.Expect(k8s.Create(t.Context(), v)).To(gomega.Succeed())
	g.Eventually(func() []any {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(v), v)).To(gomega.Succeed())
		conditions, _, _ := unstructured.NestedSlice(v.Object, "status", "conditions")
		return conditions
	}).Should(gomega.ContainElement(gomega.And(gomega.HaveKeyWithValue("type", "Ready"), gomega.HaveKeyWithValue("status", "True"))))
	const valid, invalid = `{"level": "info"}`, `{"level": "warn",}`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "app-config"}, Data: map[string]string{"config.json": valid}}
	g.Expect(k8s.Create(t.Context(), cm)).To(gomega.Succeed())
	// Until the API server has the configuration with its caBundle and
	// Reroll serves the certificate the Secret holds, failurePolicy Ignore
	// admits every write: probe with dry runs.
	const message = `reroll: ConfigMap %s/app-config fails validation: app-config/config-json: key "config.json" is not valid JSON`
	g.Eventually(func() error {
		probe := cm.DeepCopy()
		probe.Data["config.json"] = invalid
		return k8s.Update(t.Context(), probe, client.DryRunAll)
	}).Should(gomega.And(gomega.Satisfy(apierrors.IsForbidden), gomega.MatchError(gomega.ContainSubstring(message, app))))

	// Refused: the ConfigMap keeps its content.
	bad := cm.DeepCopy()
	bad.Data["config.json"] = invalid
	err = k8s.Update(t.Context(), bad)
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "denied: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring(message, app))
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm)).To(gomega.Succeed())
	g.Expect(cm.Data).To(gomega.HaveKeyWithValue("config.json", valid))
	// Valid content is written, and the webhook answered it (not Ignore).
	requests := map[string]string{"webhook": validator.ContentAdmissionPath, "code": "200"}
	served := p.sample(t, "controller_runtime_webhook_requests_total", requests)
	cm.Data["config.json"] = `{"level": "debug"}`
	g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())
	g.Expect(p.sample(t, "controller_runtime_webhook_requests_total", requests)).To(gomega.BeNumerically(">", served), "the API server called Reroll over TLS")
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "the components' RBAC is enough")
}

// waitDeleted waits until none of objs exists or, with onlyTerminating,
// until none is being deleted (an earlier test's `kubectl delete
// --wait=false` may leave them terminating, and an apply then fails). It
// gives up, with a log line, after two minutes.
func waitDeleted(t *testing.T, onlyTerminating bool, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o)
			switch {
			case apierrors.IsNotFound(err):
				return true, nil
			case err != nil:
				return false, err
			}
			return onlyTerminating && o.GetDeletionTimestamp() == nil, nil
		})
		if err != nil {
			t.Logf("%T %s is still there after 2m: %v", o, o.GetName(), err)
		}
	}
}
