package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/reroll/reroll/internal/trigger"
)

// admissionServer is Reroll's webhook server in a test: a wrapper that
// counts the requests the API server sends and can play a webhook that is
// down.
type admissionServer struct {
	webhook.Server
	// requests counts every request to any of Reroll's webhook paths.
	requests atomic.Int64
	// down makes every request fail with 503 before reaching Reroll.
	down atomic.Bool
}

func (s *admissionServer) Register(path string, h http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// startRerollWithWebhook runs Reroll with the admission webhook on a free
// local port, with a serving certificate the test makes itself (SAN
// 127.0.0.1), and registers it for Deployments in namespace ns only through
// a MutatingWebhookConfiguration of its own, deleted when the test ends.
func startRerollWithWebhook(t *testing.T, ns string, opts Options) (*reroll, *admissionServer) {
	t.Helper()
	g := newT(t)
	dir := t.TempDir()
	caPEM := writeServingCert(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	g.Expect(l.Close()).To(gomega.Succeed())

	srv := &admissionServer{Server: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})}
	opts.Admission.Enabled = true
	rr := startRerollWith(t, plane.Config, ns, opts, func(mo *ctrl.Options) { mo.WebhookServer = srv })

	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/mutate-deployment"
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "reroll-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "deployments.reroll.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{ManagedLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}},
	}
	create(t, cfg)
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), cfg) })
	// The API server loads webhook configurations through an informer: wait
	// until a dry-run create of a managed Deployment reaches the handler.
	probe := deployment(ns, "webhook-probe", autoOn, podSpec())
	probe.Labels = map[string]string{ManagedLabel: "true"}
	g.Eventually(func() int64 {
		g.Expect(k8s.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
		return srv.requests.Load()
	}).Should(gomega.BeNumerically(">", 0))
	return rr, srv
}

// writeServingCert writes a self-signed serving certificate for 127.0.0.1
// and localhost as tls.crt and tls.key in dir and returns it in PEM, the CA
// bundle of the webhook configuration.
func writeServingCert(t *testing.T, dir string) []byte {
	t.Helper()
	g := newT(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "reroll-webhook-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600)).To(gomega.Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(gomega.Succeed())
	return certPEM
}

// maxRevision is the highest deployment.kubernetes.io/revision among the
// Deployment's ReplicaSets: how many rollouts it has had, counting a return
// to an older ReplicaSet (which creates none).
func maxRevision(t *testing.T, ns, name string) int {
	t.Helper()
	n := 0
	for _, rs := range replicaSets(t, ns, name) {
		if v, err := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"]); err == nil && v > n {
			n = v
		}
	}
	return n
}

// rolledOnce creates ConfigMap "cfg" and an opted-in Deployment "web" that
// reads it, changes the data once and waits until Reroll rolled it and the
// rollout completed. It returns the Deployment's manifest as first written:
// without any of Reroll's fields.
func rolledOnce(t *testing.T, ns string) (manifest, d *appsv1.Deployment) {
	t.Helper()
	g := newT(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d = deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	manifest = d.DeepCopy()
	create(t, d)
	recorded(t, d)
	g.Eventually(func() map[string]string { return get(t, d).Labels }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() map[string]string { return get(t, d).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	waitRolledOut(t, d)
	g.Eventually(func() int { return maxRevision(t, ns, "web") }).Should(gomega.Equal(2))
	return manifest, d
}

// expectNothingRolled checks that the replace kept Reroll's fields and that
// the Deployment neither changed its pod template nor rolled.
func expectNothingRolled(t *testing.T, d, before *appsv1.Deployment) {
	t.Helper()
	g := newT(t)
	after := get(t, d.DeepCopy())
	g.Expect(after.Spec.Template.Annotations).To(gomega.HaveKeyWithValue(trigger.ConfigHashAnnotation, before.Spec.Template.Annotations[trigger.ConfigHashAnnotation]))
	g.Expect(after.Annotations).To(gomega.HaveKeyWithValue(ObservedAnnotation, before.Annotations[ObservedAnnotation]))
	g.Expect(after.Labels).To(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	// Not the generation: a Deployment's also counts metadata annotations,
	// and the replace dropped deployment.kubernetes.io/revision.
	g.Expect(equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template)).To(gomega.BeTrue(), "the pod template did not change")
	rs := len(replicaSets(t, d.Namespace, d.Name))
	g.Consistently(func() int { return len(replicaSets(t, d.Namespace, d.Name)) }).Should(gomega.Equal(rs))
	g.Consistently(func() int { return maxRevision(t, d.Namespace, d.Name) }).Should(gomega.Equal(2))
	g.Expect(rolledEvents(t, d.Namespace, d.Name)).To(gomega.HaveLen(1))
}

func TestWorkloadWebhook_ReplaceKeepsTrigger(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, _ = startRerollWithWebhook(t, ns, Options{})
	manifest, d := rolledOnce(t, ns)
	before := get(t, d.DeepCopy())

	// kubectl replace: the manifest whole, without a resourceVersion.
	g.Expect(k8s.Update(t.Context(), manifest.DeepCopy())).To(gomega.Succeed())
	expectNothingRolled(t, d, before)
}

func TestWorkloadWebhook_ServerSideApplyKeepsTrigger(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, _ = startRerollWithWebhook(t, ns, Options{})
	manifest, d := rolledOnce(t, ns)
	before := get(t, d.DeepCopy())

	manifest.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(manifest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	g.Expect(k8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("gitops"), client.ForceOwnership)).To(gomega.Succeed())
	expectNothingRolled(t, d, before)
}

func TestWorkloadWebhook_CreateRecordsFirstSight(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	rr, _ := startRerollWithWebhook(t, ns, Options{})
	cm := configMap(ns, "cfg", map[string]string{"a": "1"})
	create(t, cm)
	// The webhook reads the cache, like the reconciler: wait until it holds
	// the ConfigMap.
	g.Eventually(func() error { return rr.cache.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) }).Should(gomega.Succeed())

	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	d.Labels = map[string]string{ManagedLabel: "true"}
	create(t, d)
	// The object the create returned: written before the reconciler saw it.
	g.Expect(d.Annotations).To(gomega.HaveKey(ObservedAnnotation))
	g.Expect(d.Annotations[ObservedAnnotation]).To(gomega.ContainSubstring(`"ConfigMap/cfg"`))
	observedAtCreate := d.Annotations[ObservedAnnotation]
	g.Consistently(func() string { return get(t, d).Annotations[ObservedAnnotation] }).Should(gomega.Equal(observedAtCreate), "the reconciler found nothing to record")
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
}

func TestWorkloadWebhook_UnlabelledObjectsNeverReachIt(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, srv := startRerollWithWebhook(t, ns, Options{})
	d := deployment(ns, "plain", nil, podSpec())
	create(t, d)
	n := srv.requests.Load()
	update(t, d, func(d *appsv1.Deployment) { d.Annotations = map[string]string{"example.com/note": "x"} })
	g.Consistently(srv.requests.Load).Should(gomega.Equal(n))
	g.Expect(get(t, d).Labels).NotTo(gomega.HaveKey(ManagedLabel), "Reroll labels only the workloads it manages")
}

func TestWorkloadWebhook_DownWithIgnoreLosesNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, srv := startRerollWithWebhook(t, ns, Options{})
	manifest, d := rolledOnce(t, ns)
	rs := len(replicaSets(t, ns, "web"))

	srv.down.Store(true)
	n := srv.requests.Load()
	g.Expect(k8s.Update(t.Context(), manifest.DeepCopy())).To(gomega.Succeed(), "failurePolicy Ignore admits the write")
	g.Expect(srv.requests.Load()).To(gomega.BeNumerically(">", n), "the API server called the webhook")

	// The cost: the pod template lost the trigger and went back to the first
	// ReplicaSet's, so the Deployment rolled once more (to that ReplicaSet,
	// without creating one).
	g.Eventually(func() int { return maxRevision(t, ns, "web") }).Should(gomega.Equal(3))
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(rs))
	// The reconciler records the state again, on first sight, and labels it.
	recorded(t, d)
	g.Eventually(func() map[string]string { return get(t, d).Labels }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	g.Expect(get(t, d).Spec.Template.Annotations).NotTo(gomega.HaveKey(trigger.ConfigHashAnnotation))
	waitRolledOut(t, d)

	// The next data change still rolls it.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() int { return maxRevision(t, ns, "web") }).Should(gomega.Equal(4))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(rs + 1))
}
