package controller

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
	rerollwebhook "github.com/reroll/reroll/internal/webhook"
	"github.com/reroll/reroll/internal/workload"
	"github.com/reroll/reroll/test/controlplane"
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

	mu sync.Mutex
	// byPath counts the requests to each path.
	byPath map[string]*atomic.Int64
}

func (s *admissionServer) Register(path string, h http.Handler) {
	n := s.counter(path)
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n.Add(1)
		if s.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// counter returns the request counter of path, creating it on first use.
func (s *admissionServer) counter(path string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPath == nil {
		s.byPath = map[string]*atomic.Int64{}
	}
	n, ok := s.byPath[path]
	if !ok {
		n = &atomic.Int64{}
		s.byPath[path] = n
	}
	return n
}

// pathRequests returns how many requests reached path.
func (s *admissionServer) pathRequests(path string) int64 { return s.counter(path).Load() }

// startRerollWithWebhook runs Reroll with the admission webhook on a free
// local port, with a serving certificate the test makes itself (SAN
// 127.0.0.1), and registers it in namespace ns only, through a
// MutatingWebhookConfiguration of its own deleted when the test ends, for
// every kind Reroll runs (webhookKinds), each on its own path. It returns
// once a dry-run create of a managed object of each kind reaches that kind's
// path.
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

	kinds := webhookKinds(opts)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "reroll-" + ns}}
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k.New(), scheme)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		m, err := k8s.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		url := "https://127.0.0.1:" + strconv.Itoa(port) + WebhookPath(k)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:                    m.Resource.Resource + ".reroll.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{gvk.Group}, APIVersions: []string{gvk.Version}, Resources: []string{m.Resource.Resource}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{ManagedLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		})
	}
	create(t, cfg)
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), cfg) })
	// The API server loads webhook configurations through an informer: wait
	// until a dry-run create of a managed object of each kind reaches the
	// handler of that kind, which also proves each webhook's rule and path.
	for _, k := range kinds {
		probe := webhookProbe(t, k, ns)
		g.Eventually(func() int64 {
			g.Expect(k8s.Create(t.Context(), probe.DeepCopyObject().(client.Object), client.DryRunAll)).To(gomega.Succeed())
			return srv.pathRequests(WebhookPath(k))
		}).Should(gomega.BeNumerically(">", 0), "the webhook of %s is called", k.Name())
	}
	return rr, srv
}

// webhookKinds returns the kinds whose admission handlers Reroll run with
// opts registers, as Setup chooses them: opts.Kinds (the built-in kinds
// when nil) less opts.IgnoredWorkloads.
func webhookKinds(opts Options) []workload.Kind {
	kinds := opts.Kinds
	if kinds == nil {
		kinds = workload.Builtin()
	}
	var out []workload.Kind
	for _, k := range kinds {
		if !slices.Contains(opts.IgnoredWorkloads, workload.Plural(k)) {
			out = append(out, k)
		}
	}
	return out
}

// webhookProbe returns an opted-in object of kind k in ns that carries
// ManagedLabel, for a dry-run create that the kind's webhook must see. It
// fails the test for a kind without a fixture (the CRD-backed ones).
func webhookProbe(t *testing.T, k workload.Kind, ns string) client.Object {
	t.Helper()
	const name = "webhook-probe"
	var obj client.Object
	switch k := k.(type) {
	case workload.Deployment:
		obj = deployment(ns, name, autoOn, podSpec())
	case workload.StatefulSet:
		obj = statefulSet(ns, name, autoOn, podSpec())
	case workload.DaemonSet:
		obj = daemonSet(ns, name, autoOn, podSpec())
	case workload.CronJob:
		obj = cronJob(ns, name, autoOn, podSpec())
	case workload.Job:
		obj = job(ns, name, autoOn, podSpec())
	case workload.Unstructured:
		if k.GVK != workload.ArgoRollout().GVK {
			t.Fatalf("no webhook probe for kind %s", k.Name())
		}
		obj = customObject(t, k, ns, name, autoOn, rolloutSpec(t, name))
	default:
		t.Fatalf("no webhook probe for kind %s", k.Name())
	}
	obj.SetLabels(map[string]string{ManagedLabel: "true"})
	return obj
}

// writeServingCert writes a self-signed serving certificate for 127.0.0.1
// and localhost as tls.crt and tls.key in dir and returns it in PEM, the CA
// bundle of the webhook configuration.
func writeServingCert(t *testing.T, dir string) []byte {
	t.Helper()
	g := newT(t)
	certPEM, keyPEM, err := controlplane.SelfSigned(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "reroll-webhook-test"},
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600)).To(gomega.Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)).To(gomega.Succeed())
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
// reads it, changes the data once and waits until Reroll rolled it, whatever
// its strategy, and the rollout completed. It returns the Deployment's
// manifest as first written: without any of Reroll's fields.
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
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	// The second ReplicaSet exists: the Deployment controller saw the new
	// pod template.
	g.Eventually(func() int { return maxRevision(t, ns, "web") }).Should(gomega.Equal(2))
	waitRolledOut(t, d)
	return manifest, d
}

// triggersIn returns the triggers on a pod template: the annotations of
// every dialect (keyed by name) and Reloader's STAKATER_* env vars (keyed
// "<container>/<name>").
func triggersIn(tmpl *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	for _, k := range rerollwebhook.TemplateTriggers {
		if v, ok := tmpl.Annotations[k]; ok {
			out[k] = v
		}
	}
	for _, c := range tmpl.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, rerollwebhook.EnvVarPrefix) {
				out[c.Name+"/"+e.Name] = e.Value
			}
		}
	}
	return out
}

// expectReplaceKept checks that a replace of obj, of kind k, kept Reroll's
// fields as before held them (the record, ManagedLabel and every trigger on
// the pod template, of which before must have one) and left the pod
// template as it was. Whether the workload rolled is left to the caller.
func expectReplaceKept(t *testing.T, k workload.Kind, obj, before client.Object) {
	t.Helper()
	g := newT(t)
	after := get(t, obj.DeepCopyObject().(client.Object))
	g.Expect(after.GetAnnotations()).To(gomega.HaveKeyWithValue(ObservedAnnotation, before.GetAnnotations()[ObservedAnnotation]))
	g.Expect(after.GetLabels()).To(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	beforeT, err := k.PodTemplate(before)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	afterT, err := k.PodTemplate(after)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(triggersIn(beforeT)).NotTo(gomega.BeEmpty(), "the workload had a trigger to lose")
	g.Expect(triggersIn(afterT)).To(gomega.Equal(triggersIn(beforeT)))
	g.Expect(equality.Semantic.DeepEqual(*afterT, *beforeT)).To(gomega.BeTrue(), "the pod template did not change")
}

// expectNothingRolled checks that the replace kept Reroll's fields and that
// the Deployment neither changed its pod template nor rolled.
func expectNothingRolled(t *testing.T, d, before *appsv1.Deployment) {
	t.Helper()
	g := newT(t)
	// Not the generation: a Deployment's also counts metadata annotations,
	// and the replace dropped deployment.kubernetes.io/revision.
	expectReplaceKept(t, workload.Deployment{}, d, before)
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
	g.Expect(before.Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))

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
	g.Expect(before.Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))

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

// webhookWithConfigMap runs Reroll with the webhook in a new namespace,
// creates ConfigMap name there with data and waits until Reroll's cache
// holds it. It returns the namespace.
func webhookWithConfigMap(t *testing.T, name string, data map[string]string) string {
	t.Helper()
	ns := newNamespace(t)
	rr, _ := startRerollWithWebhook(t, ns, Options{})
	cm := configMap(ns, name, data)
	create(t, cm)
	newT(t).Eventually(func() (bool, error) { return rr.cachedConfigMap(t, ns, name) }).Should(gomega.BeTrue())
	return ns
}

func TestWorkloadWebhook_CreateSetsOnlyTheLabel(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := webhookWithConfigMap(t, "cfg", map[string]string{"a": "1"})

	// Labelled, as a manifest Reroll once managed is (the objectSelector
	// sends only such creates to the webhook).
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	d.Labels = map[string]string{ManagedLabel: "true"}
	create(t, d)
	// The object the create returned: the webhook's answer, before the
	// reconciler saw it, holds nothing from the cluster.
	g.Expect(d.Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	g.Expect(d.Spec.Template.Annotations).To(gomega.BeEmpty())

	// The reconciler records it right after, as a metadata patch: no
	// rollout.
	recorded(t, d)
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).To(gomega.ContainSubstring(`"ConfigMap/cfg"`))
	waitFirstReplicaSet(t, d)
	g.Consistently(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(2))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadWebhook_PodReloaderHashComesWithTheFirstRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := webhookWithConfigMap(t, "a", map[string]string{"k": "1"})

	d := deployment(ns, "web", map[string]string{"pod-reloader.cs.sap.com/configmaps": "a,missing"}, podSpec())
	d.Labels = map[string]string{ManagedLabel: "true"}
	create(t, d)
	g.Expect(d.Spec.Template.Annotations).NotTo(gomega.HaveKey(trigger.PodReloaderHashAnnotation), "the hash depends on the cluster's state, which the webhook does not read")
	recorded(t, d)
	waitFirstReplicaSet(t, d)
	g.Consistently(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(1))

	update(t, configMap(ns, "a", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "2" })
	g.Eventually(func() string { return get(t, d).Spec.Template.Annotations[trigger.PodReloaderHashAnnotation] }).Should(gomega.Equal(podReloaderHash(t, ns, []string{"a", "missing"}, nil)))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(2))
}

func TestWorkloadWebhook_ForgedReviewLearnsNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, srv := startRerollWithWebhook(t, ns, Options{})
	secrets := map[string]string{"db-credentials": "db-password", "tls-serving": "tls-private-key", "payments-token": "bearer-token"}
	for name, key := range secrets {
		create(t, secret(ns, name, map[string]string{key: "value-of-" + name}))
	}
	// Positive check first: the reconciler sees these Secrets (a workload
	// that lists them is recorded with them).
	probe := deployment(ns, "probe", map[string]string{"secret.reloader.stakater.com/reload": ".*"}, podSpec())
	create(t, probe)
	g.Eventually(func() string { return get(t, probe).Annotations[ObservedAnnotation] }).Should(gomega.ContainSubstring("Secret/db-credentials"))

	// Anything that reaches the port sends a CREATE of its own making for
	// that namespace, with a list that matches every Secret.
	forged := deployment(ns, "forged", map[string]string{"secret.reloader.stakater.com/reload": ".*", "reroll.dev/auto": "true"}, podSpec())
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "forged", Operation: admissionv1.Create, Namespace: ns, Name: "forged",
			Kind:     metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Object:   runtime.RawExtension{Raw: mustJSON(t, forged)},
		},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	port := srv.Server.(*webhook.DefaultServer).Options.Port
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own server
	resp, err := hc.Post("https://127.0.0.1:"+strconv.Itoa(port)+WebhookPath(workload.Deployment{}), "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var review admissionv1.AdmissionReview
	g.Expect(json.Unmarshal(answer, &review)).To(gomega.Succeed())
	g.Expect(review.Response).NotTo(gomega.BeNil())
	g.Expect(review.Response.Allowed).To(gomega.BeTrue())
	g.Expect(string(review.Response.Patch)).To(gomega.ContainSubstring(ManagedLabel), "the answer is the label")
	for name, key := range secrets {
		g.Expect(string(answer)).NotTo(gomega.ContainSubstring(name), "no Secret name")
		g.Expect(string(answer)).NotTo(gomega.ContainSubstring(key), "no key")
		g.Expect(string(review.Response.Patch)).NotTo(gomega.ContainSubstring(name))
	}
	var patch []map[string]any
	g.Expect(json.Unmarshal(review.Response.Patch, &patch)).To(gomega.Succeed())
	g.Expect(patch).To(gomega.HaveLen(1))
	g.Expect(patch[0]).To(gomega.HaveKeyWithValue("path", gomega.HavePrefix("/metadata/labels")))
	g.Expect(string(review.Response.Patch)).NotTo(gomega.MatchRegexp(`[0-9a-f]{16}`), "no digest")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return b
}

func TestWorkloadWebhook_OptOutSticks(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, srv := startRerollWithWebhook(t, ns, Options{})
	_, d := rolledOnce(t, ns)
	n := srv.requests.Load()

	// Opt out: Reroll removes its record and label, and that write passes
	// through its own webhook, which must not put them back.
	update(t, d, func(d *appsv1.Deployment) { delete(d.Annotations, "reroll.dev/auto") })
	g.Eventually(func() map[string]string { return get(t, d).Labels }).ShouldNot(gomega.HaveKey(ManagedLabel))
	g.Expect(srv.requests.Load()).To(gomega.BeNumerically(">", n), "the writes reached the webhook")
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	g.Consistently(func() map[string]string { return get(t, d).Labels }).ShouldNot(gomega.HaveKey(ManagedLabel))
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))

	// And a data change no longer rolls it.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
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
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
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

// controllerRevisions returns the ControllerRevisions obj (a StatefulSet or
// a DaemonSet) controls: one per pod template it has run.
func controllerRevisions(t *testing.T, obj client.Object) []appsv1.ControllerRevision {
	t.Helper()
	var list appsv1.ControllerRevisionList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(obj.GetNamespace()))).To(gomega.Succeed())
	var out []appsv1.ControllerRevision
	for _, cr := range list.Items {
		if metav1.IsControlledBy(&cr, obj) {
			out = append(out, cr)
		}
	}
	return out
}

func TestWorkloadWebhook_ReplaceKeepsTriggerOfStatefulSetAndDaemonSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind workload.Kind
		// object returns the opted-in workload "app", reading ConfigMap
		// "cfg", as its manifest says.
		object func(ns string) client.Object
		// rolledOut checks that the workload's controller finished rolling
		// out its latest pod template.
		rolledOut func(g gomega.Gomega, obj client.Object)
	}{{
		kind:   workload.StatefulSet{},
		object: func(ns string) client.Object { return statefulSet(ns, "app", autoOn, podSpec(envFrom("cfg"))) },
		rolledOut: func(g gomega.Gomega, obj client.Object) {
			sts := obj.(*appsv1.StatefulSet)
			// Every pod runs the latest template. Not also its readiness
			// (CurrentRevision, ReadyReplicas): kwok once left a new pod
			// unready for minutes in a loaded CI run, and readiness says
			// nothing about the replace below.
			g.Expect(sts.Status.ObservedGeneration).To(gomega.Equal(sts.Generation))
			g.Expect(sts.Status.UpdatedReplicas).To(gomega.Equal(*sts.Spec.Replicas))
		},
	}, {
		kind:   workload.DaemonSet{},
		object: func(ns string) client.Object { return daemonSet(ns, "app", autoOn, podSpec(envFrom("cfg"))) },
		rolledOut: func(g gomega.Gomega, obj client.Object) {
			ds := obj.(*appsv1.DaemonSet)
			g.Expect(ds.Status.ObservedGeneration).To(gomega.Equal(ds.Generation))
			g.Expect(ds.Status.DesiredNumberScheduled).To(gomega.BeNumerically(">", 0))
			// Every pod runs the latest template. Not also NumberReady: kwok
			// once left the new pod unready for minutes in a loaded CI run,
			// and readiness says nothing about the replace below.
			g.Expect(ds.Status.UpdatedNumberScheduled).To(gomega.Equal(ds.Status.DesiredNumberScheduled))
		},
	}} {
		t.Run(tc.kind.Name(), func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			_, _ = startRerollWithWebhook(t, ns, Options{})
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
			obj := tc.object(ns)
			manifest := obj.DeepCopyObject().(client.Object)
			create(t, obj)
			recorded(t, obj)
			g.Eventually(func() map[string]string { return get(t, obj).GetLabels() }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
			g.Eventually(func() []appsv1.ControllerRevision { return controllerRevisions(t, obj) }).Should(gomega.HaveLen(1))

			// Rolled once.
			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
			g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
			g.Eventually(func() []appsv1.ControllerRevision { return controllerRevisions(t, obj) }).Should(gomega.HaveLen(2))
			g.Eventually(func(g gomega.Gomega) { tc.rolledOut(g, get(t, obj)) }).Should(gomega.Succeed())
			before := get(t, obj.DeepCopyObject().(client.Object))
			beforeT, err := tc.kind.PodTemplate(before)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(beforeT.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))

			// kubectl replace: the manifest whole, without a resourceVersion.
			g.Expect(k8s.Update(t.Context(), manifest.DeepCopyObject().(client.Object))).To(gomega.Succeed())
			expectReplaceKept(t, tc.kind, obj, before)
			// Unlike a Deployment's, their generation counts the spec only:
			// the replace wrote the same spec.
			g.Expect(get(t, obj).GetGeneration()).To(gomega.Equal(before.GetGeneration()))
			g.Consistently(func() int { return len(controllerRevisions(t, obj)) }).Should(gomega.Equal(2), "no new ControllerRevision: no rollout")
			g.Expect(rolledEvents(t, ns, "app")).To(gomega.HaveLen(1))
		})
	}
}

func TestWorkloadWebhook_ReplaceKeepsEnvVarTrigger(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, _ = startRerollWithWebhook(t, ns, Options{PlanOptions: plan.Options{Strategy: trigger.EnvVars}})
	manifest, d := rolledOnce(t, ns)
	want := corev1.EnvVar{Name: "STAKATER_CFG_CONFIGMAP", Value: reloaderSHA1("a=2")}
	before := get(t, d.DeepCopy())
	g.Expect(before.Spec.Template.Spec.Containers[0].Env).To(gomega.Equal([]corev1.EnvVar{want}))
	g.Expect(before.Spec.Template.Annotations).NotTo(gomega.HaveKey(trigger.ConfigHashAnnotation), "env-vars writes no annotation")
	rs := len(replicaSets(t, ns, "web"))
	g.Expect(rs).To(gomega.Equal(2))

	// kubectl replace: the manifest, whose container has no env, whole and
	// without a resourceVersion.
	g.Expect(manifest.Spec.Template.Spec.Containers[0].Env).To(gomega.BeEmpty())
	g.Expect(k8s.Update(t.Context(), manifest.DeepCopy())).To(gomega.Succeed())
	g.Expect(get(t, d).Spec.Template.Spec.Containers[0].Env).To(gomega.Equal([]corev1.EnvVar{want}))
	expectNothingRolled(t, d, before)
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(rs), "no extra ReplicaSet")
}

// TestWorkloadWebhook_ReplaceKeepsTriggerOfCustomResource replaces an Argo
// Rollout, a custom resource that the webhook decodes as unstructured data,
// with its manifest: Reroll's fields come back and every field of the
// manifest, known to Reroll's types or not, is stored as written.
func TestWorkloadWebhook_ReplaceKeepsTriggerOfCustomResource(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installCRD(t, argoRolloutCRD(t))
	ns := newNamespace(t)
	argo := workload.ArgoRollout()
	_, _ = startRerollWithWebhook(t, ns, Options{Kinds: []workload.Kind{argo}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	spec := rolloutSpec(t, "web")
	spec["minReadySeconds"] = int64(7)
	spec["analysis"] = map[string]any{"successfulRunHistoryLimit": int64(3)}
	manifest := customObject(t, argo, ns, "web", autoOn, spec)
	r := manifest.DeepCopy()
	create(t, r)
	recorded(t, r)
	g.Eventually(func() map[string]string { return get(t, r).GetLabels() }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() map[string]string { return templateAnnotations(t, r) }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	before := get(t, r.DeepCopy())

	// A custom resource is replaced with the stored resourceVersion: the API
	// server refuses unconditional updates of custom resources.
	replace := manifest.DeepCopy()
	replace.SetResourceVersion(before.GetResourceVersion())
	g.Expect(k8s.Update(t.Context(), replace)).To(gomega.Succeed())
	expectReplaceKept(t, argo, r, before)
	after := get(t, r.DeepCopy())
	g.Expect(after.GetGeneration()).To(gomega.Equal(before.GetGeneration()), "the spec did not change")
	g.Expect(after.Object["spec"]).To(gomega.HaveKeyWithValue("analysis", map[string]any{"successfulRunHistoryLimit": int64(3)}))
	g.Expect(after.Object["spec"]).To(gomega.HaveKeyWithValue("minReadySeconds", int64(7)))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))
}

// A replace (Argo CD Replace=true) writes the manifest without Reroll's
// state: the webhook puts back the workload's part of its change set and
// the times of its latest rollouts (both signed by Reroll), so the circuit
// breaker still counts a failure and the storm breaker its rollouts. A
// write that keeps the record and removes one of them on purpose (kubectl
// reroll resume removes reroll.dev/rollouts) stands.
func TestWorkloadWebhook_ReplaceKeepsDeliveryState(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := waveNamespace(t, "0")
	opts := deliveryOptions(t, ns, ns)
	opts.Storm = safe.Storm{Max: 10, Period: time.Hour}
	_, _ = startRerollWithWebhook(t, ns, opts)
	manifest, d := rolledOnce(t, ns)
	g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.And(
		gomega.HaveKey(safe.MemberAnnotation), gomega.HaveKey(safe.RolloutsAnnotation)), "the state to lose")
	// Its last change: the rollout healthy.
	g.Eventually(func() bool { return member(t, d).Healthy.IsZero() }).Should(gomega.BeFalse())
	before := get(t, d.DeepCopy())
	g.Expect(manifest.Annotations).NotTo(gomega.HaveKey(safe.MemberAnnotation))

	// kubectl replace: the manifest whole, without a resourceVersion.
	g.Expect(k8s.Update(t.Context(), manifest.DeepCopy())).To(gomega.Succeed())
	after := get(t, d.DeepCopy())
	for _, k := range []string{safe.MemberAnnotation, safe.RolloutsAnnotation} {
		g.Expect(after.Annotations).To(gomega.HaveKeyWithValue(k, before.Annotations[k]), k)
	}
	expectNothingRolled(t, d, before)

	// As kubectl reroll resume does: the record stays, the times go.
	update(t, d, func(d *appsv1.Deployment) { delete(d.Annotations, safe.RolloutsAnnotation) })
	g.Consistently(func() map[string]string { return get(t, d).Annotations }).ShouldNot(gomega.HaveKey(safe.RolloutsAnnotation))
	g.Expect(get(t, d).Annotations).To(gomega.HaveKey(safe.MemberAnnotation))
}
