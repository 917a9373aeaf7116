//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/test/controlplane"
)

const managedLabel = "reroll.dev/managed"

// TestHelmChart_WebhookWithSelfSignedCertificates installs the chart with
// the admission webhook and runs the binary with the pod's arguments and
// ServiceAccount. Reroll must replace the expiring CA it finds in the
// chart's Secret with a new one, write it into the caBundle of the chart's
// MutatingWebhookConfiguration, serve the certificate the Secret holds, and
// keep the trigger on a Deployment that a replace rewrites, and the fields
// a Projection wrote on a custom resource that a replace rewrites.
//
// The local plane has no pod network, so two things a cluster does are done
// here: the configuration reaches Reroll by url: at localhost (a DNS name
// the certificate gets through --webhook-extra-dns-names) instead of through
// the Service, and the kubelet's Secret volume is a goroutine that copies
// the Secret into --webhook-cert-dir.
func TestHelmChart_WebhookWithSelfSignedCertificates(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "e2e-wh-sys-", restricted)
	app := newNamespace(t, "e2e-wh-app-", nil)
	const release = "reroll-wh"
	createWidgetCRD(t)
	helmInstall(t, release, sys, map[string]any{"namespaces": []string{app}, "webhook.enabled": true,
		"projections.enabled": true, "projections.webhookRules": []map[string]any{{"apiGroups": []string{widgetGroup}, "resources": []string{"widgets"}}}})

	// Least privilege: the certificate rotation may update its own Secret
	// and its own configuration, nothing else of either kind (create on
	// Secrets of its own namespace is the digest key's).
	expectAccess(t, sys, release,
		[]access{{"list", "", "secrets", sys}, {"watch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", ""}},
		[]access{{"update", "", "secrets", sys}, {"create", "", "secrets", app}, {"update", "", "secrets", app},
			{"update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", ""},
			{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ""}})

	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: release}, &cfg)).To(gomega.Succeed())
	paths := map[string]string{}
	for _, w := range cfg.Webhooks {
		g.Expect(w.ClientConfig.Service).NotTo(gomega.BeNil())
		paths[w.Rules[0].Resources[0]] = *w.ClientConfig.Service.Path
		g.Expect(w.ClientConfig.CABundle).To(gomega.BeEmpty(), "Reroll fills it in")
	}
	g.Expect(paths).To(gomega.HaveKeyWithValue("deployments", "/mutate-deployment"))
	g.Expect(paths).To(gomega.HaveKeyWithValue("statefulsets", "/mutate-statefulset"))
	g.Expect(paths).To(gomega.HaveKeyWithValue("rollouts", "/mutate-rollout.argoproj.io"))
	g.Expect(paths).To(gomega.HaveKeyWithValue("widgets", "/mutate-projected"))
	g.Expect(paths).To(gomega.HaveKeyWithValue("projections", "/validate-projection-author"))

	port := freeAddr(t)[len("127.0.0.1:"):]
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.Service = nil
		cfg.Webhooks[i].ClientConfig.URL = ptr.To("https://localhost:" + port + paths[cfg.Webhooks[i].Rules[0].Resources[0]])
	}
	g.Expect(k8s.Update(t.Context(), &cfg)).To(gomega.Succeed())

	secret := &corev1.Secret{}
	secretKey := client.ObjectKey{Namespace: sys, Name: release + "-webhook-cert"}
	g.Expect(k8s.Get(t.Context(), secretKey, secret)).To(gomega.Succeed())
	g.Expect(secret.Data).To(gomega.BeEmpty(), "the chart creates the Secret empty")
	expiring := expiringCA(t)
	secret.Data = map[string][]byte{"ca.crt": expiring.cert, "ca.key": expiring.key, "tls.crt": expiring.cert, "tls.key": expiring.key}
	g.Expect(k8s.Update(t.Context(), secret)).To(gomega.Succeed())

	certDir := t.TempDir()
	mountSecret(t, secretKey, certDir)
	createWorkload(t, app)
	kubeconfig, _ := serviceAccountKubeconfig(t, sys, release)
	// The Projection key is derived from the installation key (the chart's
	// default): no key Secret to mount.
	args := append(podArgs(t, sys, release), "--webhook-cert-dir="+certDir, "--webhook-port="+port, "--webhook-extra-dns-names=localhost")
	g.Expect(args).To(gomega.ContainElements("--enable-webhook", "--webhook-cert-secret="+release+"-webhook-cert", "--webhook-configuration-name="+release))
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})

	// Rotated: a new CA, valid for years, in the Secret and in every webhook.
	// rotated waits until the Secret holds a CA other than old, valid for
	// years, and a serving certificate it signed, and until every webhook
	// of the configuration trusts that CA; it returns the CA.
	rotated := func(old []byte) []byte {
		var ca []byte
		g.Eventually(func() []byte {
			g.Expect(k8s.Get(t.Context(), secretKey, secret)).To(gomega.Succeed())
			ca = secret.Data["ca.crt"]
			return ca
		}).ShouldNot(gomega.Or(gomega.BeEmpty(), gomega.Equal(old)))
		g.Expect(parseCert(t, ca).NotAfter).To(gomega.BeTemporally(">", time.Now().Add(365*24*time.Hour)))
		serving := parseCert(t, secret.Data["tls.crt"])
		g.Expect(serving.DNSNames).To(gomega.ContainElements(release+"-webhook."+sys+".svc", "localhost"))
		g.Expect(serving.CheckSignatureFrom(parseCert(t, ca))).To(gomega.Succeed())
		g.Eventually(func() [][]byte {
			g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: release}, &cfg)).To(gomega.Succeed())
			var bundles [][]byte
			for _, w := range cfg.Webhooks {
				bundles = append(bundles, w.ClientConfig.CABundle)
			}
			return bundles
		}).Should(gomega.HaveEach(gomega.Equal(ca)))
		return ca
	}
	ca := rotated(expiring.cert)
	// The expiry the chart's RerollWebhookCertificateExpiring alert reads:
	// the renewed certificate's, once on disk.
	g.Eventually(func() float64 {
		return p.sample(t, "reroll_webhook_certificate_expiry_timestamp_seconds", nil)
	}).Should(gomega.BeNumerically(">", float64(time.Now().Add(300*24*time.Hour).Unix())), "a serving certificate valid for about a year")

	// The webhook at work: the managed Deployment rolls once for a data
	// change, and a replace with the manifest as first written keeps the
	// trigger and rolls nothing.
	g.Eventually(func() map[string]string { return deploymentIn(t, app, "web").Labels }).Should(gomega.HaveKeyWithValue(managedLabel, "true"))
	mutate(t, &corev1.ConfigMap{}, app, "app-config", func(o client.Object) { o.(*corev1.ConfigMap).Data["LOG_LEVEL"] = "debug" })
	g.Eventually(func() map[string]string { return deploymentIn(t, app, "web").Spec.Template.Annotations }).Should(gomega.HaveKey(configHashAnnotation))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, app) }).Should(gomega.HaveLen(2))
	before := deploymentIn(t, app, "web")

	// replace writes the Deployment without Reroll's fields and returns
	// what the API server stored (or, with opts, would store).
	replace := func(opts ...client.UpdateOption) *appsv1.Deployment {
		var manifest *appsv1.Deployment
		g.Eventually(func() error {
			manifest = deploymentIn(t, app, "web")
			delete(manifest.Spec.Template.Annotations, configHashAnnotation)
			delete(manifest.Annotations, observedAnnotation)
			delete(manifest.Labels, managedLabel)
			return k8s.Update(t.Context(), manifest, opts...)
		}).Should(gomega.Succeed())
		return manifest
	}
	// Until the kubelet (here: mountSecret) has the renewed certificate on
	// disk, Reroll may serve the old one, which the API server rejects, and
	// failurePolicy Ignore admits writes unchanged: probe with dry runs.
	g.Eventually(func() map[string]string { return replace(client.DryRunAll).Labels }).Should(gomega.HaveKeyWithValue(managedLabel, "true"))

	requests := map[string]string{"webhook": "/mutate-deployment", "code": "200"}
	served := p.sample(t, "controller_runtime_webhook_requests_total", requests)
	replace()
	after := deploymentIn(t, app, "web")
	g.Expect(after.Spec.Template.Annotations).To(gomega.HaveKeyWithValue(configHashAnnotation, before.Spec.Template.Annotations[configHashAnnotation]))
	g.Expect(after.Annotations).To(gomega.HaveKeyWithValue(observedAnnotation, before.Annotations[observedAnnotation]))
	g.Expect(after.Labels).To(gomega.HaveKeyWithValue(managedLabel, "true"))
	g.Expect(equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template)).To(gomega.BeTrue())
	g.Expect(p.sample(t, "controller_runtime_webhook_requests_total", requests)).To(gomega.BeNumerically(">", served), "the API server called Reroll over TLS")
	g.Consistently(func() []appsv1.ReplicaSet { return replicaSets(t, app) }).Should(gomega.HaveLen(2))

	projectionSurvivesReplace(t, app, p)

	// A Secret emptied by a replace (helm upgrade --force) is filled in
	// again at once: Reroll watches it.
	g.Expect(k8s.Get(t.Context(), secretKey, secret)).To(gomega.Succeed())
	secret.Data = nil
	g.Expect(k8s.Update(t.Context(), secret)).To(gomega.Succeed())
	rotated(ca)
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "the chart's RBAC is enough")
}

const widgetGroup = "e2e.reroll.dev"

// createWidgetCRD registers widgets.e2e.reroll.dev, a namespaced kind with
// a free-form spec, the target of projectionSurvivesReplace.
func createWidgetCRD(t *testing.T) {
	t.Helper()
	g := newT(t)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + widgetGroup},
		"spec": map[string]any{
			"group": widgetGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}},
		},
	}}
	g.Expect(k8s.Create(t.Context(), crd)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
	g.Eventually(func() error { return k8s.List(t.Context(), widgetList(), client.InNamespace("default")) }).Should(gomega.Succeed())
}

func widgetList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(widgetGroup + "/v1")
	l.SetKind("WidgetList")
	return l
}

// projectionSurvivesReplace has a Projection write the Secret db's password
// into a Widget of ns, as a ServiceAccount that may read it and patch
// widgets, then replaces the Widget with its manifest: the webhook
// (/mutate-projected, served by the process p) puts the field back in that
// write.
func projectionSurvivesReplace(t *testing.T, ns string, p *process) {
	t.Helper()
	g := newT(t)
	manifest := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": "1"}}}
		u.SetAPIVersion(widgetGroup + "/v1")
		u.SetKind("Widget")
		u.SetNamespace(ns)
		u.SetName("w")
		return u
	}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "projector"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "projector"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}, Verbs: []string{"get"}},
			{APIGroups: []string{widgetGroup}, Resources: []string{"widgets"}, Verbs: []string{"get", "patch"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "projector"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "projector"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "projector", Namespace: ns}},
		},
		manifest(),
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "reroll.dev/v1alpha1", "kind": "Projection",
			"metadata": map[string]any{"namespace": ns, "name": "db-password"},
			"spec": map[string]any{
				"serviceAccountName": "projector",
				"sources":            []any{map[string]any{"name": "password", "secretKeyRef": map[string]any{"name": "db", "key": "password"}}},
				"target":             map[string]any{"apiVersion": widgetGroup + "/v1", "kind": "Widget", "name": "w"},
				"fields":             []any{map[string]any{"path": "spec.password", "source": "password"}},
			},
		}},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(t.Context(), o)).To(gomega.Succeed())
	}
	live := func() *unstructured.Unstructured {
		u := manifest()
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(u), u)).To(gomega.Succeed())
		return u
	}
	password := func(u *unstructured.Unstructured) string {
		v, _, _ := unstructured.NestedString(u.Object, "spec", "password")
		return v
	}
	g.Eventually(func() string { return password(live()) }).Should(gomega.Equal("one"))
	g.Expect(live().GetLabels()).To(gomega.HaveKeyWithValue("reroll.dev/projected", "true"))
	// replace writes the manifest at the live resourceVersion, as kubectl
	// replace does, and returns what the API server stored (or, with
	// opts, would store).
	replace := func(opts ...client.UpdateOption) *unstructured.Unstructured {
		var u *unstructured.Unstructured
		g.Eventually(func() error {
			u = manifest()
			u.SetResourceVersion(live().GetResourceVersion())
			return k8s.Update(t.Context(), u, opts...)
		}).Should(gomega.Succeed())
		return u
	}
	g.Eventually(func() string { return password(replace(client.DryRunAll)) }).Should(gomega.Equal("one"))
	requests := map[string]string{"webhook": "/mutate-projected", "code": "200"}
	served := p.sample(t, "controller_runtime_webhook_requests_total", requests)
	stored := replace()
	g.Expect(password(stored)).To(gomega.Equal("one"))
	g.Expect(stored.GetLabels()).To(gomega.HaveKeyWithValue("reroll.dev/projected", "true"))
	g.Expect(p.sample(t, "controller_runtime_webhook_requests_total", requests)).To(gomega.BeNumerically(">", served), "the API server called Reroll over TLS")
}

// keyPair is a PEM certificate and its PEM private key.
type keyPair struct{ cert, key []byte }

// expiringCA returns a self-signed CA named as Reroll names its own, valid
// for one more hour: inside the 90 days before expiry in which Reroll
// renews it.
func expiringCA(t *testing.T) keyPair {
	t.Helper()
	cert, key, err := controlplane.SelfSigned(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "reroll-ca", Organization: []string{"reroll"}},
		DNSNames:              []string{"reroll-ca"},
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return keyPair{cert: cert, key: key}
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	g := newT(t)
	b, _ := pem.Decode(p)
	g.Expect(b).NotTo(gomega.BeNil(), "a PEM certificate")
	c, err := x509.ParseCertificate(b.Bytes)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return c
}

// mountSecret plays the kubelet's Secret volume: until the test ends, it
// copies each key of the Secret into a file of dir whenever the Secret
// changes, replacing the file in one rename as the kubelet's atomic writer
// does.
func mountSecret(t *testing.T, key client.ObjectKey, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		written := map[string][]byte{}
		for ctx.Err() == nil {
			var s corev1.Secret
			if err := k8s.Get(ctx, key, &s); err == nil {
				for name, data := range s.Data {
					if bytes.Equal(written[name], data) || strings.Contains(name, "/") {
						continue
					}
					tmp := filepath.Join(dir, "."+name+".tmp")
					if os.WriteFile(tmp, data, 0o600) == nil && os.Rename(tmp, filepath.Join(dir, name)) == nil {
						written[name] = data
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}
