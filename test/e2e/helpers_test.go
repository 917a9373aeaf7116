//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartDir is the chart under test, relative to the repository root.
const chartDir = "charts/reroll"

// run runs a command in the repository root and returns its standard output;
// a failure carries its standard error. `helm template` and `helm lint` get
// --kube-version of the local control plane: without it helm 3.16 assumes
// Kubernetes 1.31, which the chart's kubeVersion (>=1.32) refuses, as a
// user's helm 3.16 would.
func run(env []string, name string, args ...string) (string, error) {
	if name == helmBin && len(args) > 0 && (args[0] == "template" || args[0] == "lint") {
		args = append(append([]string{}, args...), "--kube-version", kubeVersion)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// helm runs helm against the local control plane.
func helm(args ...string) (string, error) {
	return run(helmEnv, helmBin, append(args, "--kubeconfig", plane.Kubeconfig)...)
}

// setFlags turns values into helm --set-json flags, one per key, so that
// types (lists, numbers, booleans) reach the schema as written.
func setFlags(values map[string]any) []string {
	var out []string
	for k, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		out = append(out, "--set-json", k+"="+string(b))
	}
	return out
}

// renderChart runs `helm template` of the chart in namespace "reroll-system"
// with values, and returns the objects.
func renderChart(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "r", chartDir, "--namespace", "reroll-system"}, setFlags(values)...)
	out, err := run(helmEnv, helmBin, args...)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return decodeAll(t, out)
}

// decodeAll decodes a multi-document YAML stream, skipping empty documents.
func decodeAll(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		newT(t).Expect(err).NotTo(gomega.HaveOccurred())
		if len(u.Object) > 0 {
			out = append(out, &u)
		}
	}
}

// only returns the objects of kind.
func only(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// convert turns an unstructured object into a typed one.
func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	newT(t).Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)).To(gomega.Succeed())
	return out
}

// container returns the reroll container of the single Deployment in objs.
func container(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	deps := only(objs, "Deployment")
	newT(t).Expect(deps).To(gomega.HaveLen(1))
	return convert[appsv1.Deployment](t, deps[0]).Spec.Template.Spec.Containers[0]
}

// newNamespace creates a namespace with labels, waits for its default
// ServiceAccount, and deletes it when the test ends.
func newNamespace(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	g := newT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels}}
	g.Expect(k8s.Create(t.Context(), ns)).To(gomega.Succeed())
	// The cleanup waits until the namespace is gone: the serial tests run
	// Reroll cluster-wide, and one that started while an earlier test's
	// namespace was still terminating would act on its workloads, and see
	// its Events there refused (403: the namespace is being terminated).
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), ns)
		err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKey{Name: ns.Name}, &corev1.Namespace{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Logf("namespace %s was not deleted within 2m: %v", ns.Name, err)
		}
	})
	g.Eventually(func() error {
		return k8s.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(gomega.Succeed())
	return ns.Name
}

// helmInstall installs the chart as release name in namespace ns with
// values, waiting until its pods are ready (kwok marks them so; nothing
// runs), and uninstalls it when the test ends.
func helmInstall(t *testing.T, name, ns string, values map[string]any) {
	t.Helper()
	args := append([]string{"install", name, chartDir, "--namespace", ns, "--wait", "--timeout", "2m",
		"--set", "image.tag=e2e"}, setFlags(values)...)
	_, err := helm(args...)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		if _, err := helm("uninstall", name, "--namespace", ns, "--wait"); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})
}

// serviceAccountKubeconfig returns the path of a kubeconfig for the plane
// that authenticates with a token of ServiceAccount ns/name, from the
// TokenRequest API, as a pod of that ServiceAccount would; and a clientset
// with it.
func serviceAccountKubeconfig(t *testing.T, ns, name string) (string, kubernetes.Interface) {
	t.Helper()
	g := newT(t)
	tok, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["plane"] = &clientcmdapi.Cluster{Server: plane.Config.Host, CertificateAuthorityData: plane.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(gomega.Succeed())
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cs, err := kubernetes.NewForConfig(rc)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return path, cs
}

// access is one permission to check: can the ServiceAccount do verb on
// resource (group/resource, "" group for the core API) in namespace ("" for
// cluster-wide)?
type access struct {
	// resource may end in "#<name>" for a permission on one object
	// (resourceNames).
	verb, group, resource, namespace string
}

func (a access) String() string {
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	return fmt.Sprintf("%s %s.%s %s", a.verb, a.resource, a.group, where)
}

// allowed asks the API server's authorizer, with a SubjectAccessReview,
// whether ServiceAccount ns/name may do a.
func allowed(t *testing.T, ns, name string, a access) bool {
	t.Helper()
	resource, objName, _ := strings.Cut(a.resource, "#")
	resource, sub, _ := strings.Cut(resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: resource, Subresource: sub, Name: objName, Namespace: a.namespace,
		},
	}}
	res, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return res.Status.Allowed
}

// expectAccess checks each permission: allow lists what must be allowed,
// deny what must not be.
func expectAccess(t *testing.T, ns, name string, allow, deny []access) {
	t.Helper()
	for _, a := range allow {
		if !allowed(t, ns, name, a) {
			t.Errorf("ServiceAccount %s/%s cannot %s; Reroll needs it", ns, name, a)
		}
	}
	for _, a := range deny {
		if allowed(t, ns, name, a) {
			t.Errorf("ServiceAccount %s/%s can %s; it should not", ns, name, a)
		}
	}
}

// process is the reroll binary running as a local process.
type process struct {
	cmd         *exec.Cmd
	log         *syncBuffer
	metricsAddr string
	probeAddr   string
	done        chan error
	// bearer, when set, is the token of secure metrics (startRerollAsShipped
	// with --metrics-token-secret): scrape then reads HTTPS with it.
	bearer string
}

// startReroll runs the built reroll binary with the kubeconfig and args, as
// a pod would with env (POD_NAMESPACE, POD_NAME), metrics and probes on free
// local ports. It waits until /readyz answers and stops the process, by its
// pid, when the test ends. As it ships when kubeconfig is a ServiceAccount's
// of the chart (serviceAccountKubeconfig) and args are the chart's pod's
// (podArgs); the tests that pass the plane's admin kubeconfig and args of
// their own (HA, metrics) are about leader election and the metrics
// endpoint, not about permissions, and say which flags they change.
//
// The metrics are served plainly, whatever args say, for scrape and sample;
// startRerollAsShipped keeps the args' metrics settings.
func startReroll(t *testing.T, kubeconfig string, args []string, env map[string]string) *process {
	t.Helper()
	plain := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "--metrics-token-secret=") })
	// Later flags win.
	return startRerollAsShipped(t, kubeconfig, append(plain, "--metrics-secure=false"), env)
}

// startRerollAsShipped is startReroll with the metrics served as args say
// (the chart's secure metrics, for TestHelmChart_MonitorsScrapeWithTheChartsCredentials).
func startRerollAsShipped(t *testing.T, kubeconfig string, args []string, env map[string]string) *process {
	t.Helper()
	g := newT(t)
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	// Later flags win: the pod's bind addresses are replaced by local ones.
	args = append(slices.Clone(args), "--kubeconfig="+kubeconfig, "--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+probeAddr)
	p := &process{cmd: exec.Command(rerollBin, args...), log: &syncBuffer{}, metricsAddr: metricsAddr, probeAddr: probeAddr, done: make(chan error, 1)}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	g.Expect(p.cmd.Start()).To(gomega.Succeed())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("reroll %s\n%s", strings.Join(args, " "), p.log.String())
		}
	})
	g.Eventually(func() (int, error) {
		select {
		case err := <-p.done:
			p.done <- err
			return 0, fmt.Errorf("reroll exited: %v\n%s", err, p.log.String())
		default:
		}
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}).Should(gomega.Equal(http.StatusOK))
	// Ready is not yet listening for metrics: the secure metrics server
	// first generates its self-signed certificate, seconds on a loaded
	// machine (a scrape right after readiness was refused).
	g.Eventually(func() error {
		c, err := net.Dial("tcp", metricsAddr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}).Should(gomega.Succeed())
	return p
}

// useMetricsToken makes p's scrapes carry the bearer token that Reroll
// keeps in the Secret its --metrics-token-secret of args names, in ns
// (created on first start): secure metrics, as the chart ships them. Args
// without that flag leave p as it is.
func (p *process) useMetricsToken(t *testing.T, ns string, args []string) {
	t.Helper()
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--metrics-token-secret=")
		if !ok {
			continue
		}
		var secret corev1.Secret
		newT(t).Eventually(func() error { return k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &secret) }).Should(gomega.Succeed())
		p.bearer = string(secret.Data["token"])
		// The secure server answers a little after /readyz (its
		// certificate is made at start).
		newT(t).Eventually(func() error { _, err := p.tryScrape(t); return err }).Should(gomega.Succeed())
	}
}

// stop sends SIGTERM, as the kubelet would, and waits for a clean exit.
func (p *process) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("reroll exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("reroll did not stop within 30s of SIGTERM")
	}
}

// scrape reads the process's /metrics; a status other than 200 fails the test.
func (p *process) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := p.tryScrape(t)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return families
}

// tryScrape reads the process's /metrics, or says why it could not.
func (p *process) tryScrape(t *testing.T) (map[string]*dto.MetricFamily, error) {
	url, c := "http://"+p.metricsAddr+"/metrics", http.DefaultClient
	if p.bearer != "" {
		url = "https://" + p.metricsAddr + "/metrics"
		c = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed certificate
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if p.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+p.bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sample returns the value of the counter, gauge or histogram count of
// family name whose labels include want; 0 when there is none.
func (p *process) sample(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	f := p.scrape(t)[name]
	var sum float64
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// freeAddr returns 127.0.0.1:<a port free now>.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// podArgs returns the args of the reroll container of a Deployment as the
// API server holds it: what the chart or manifest passes.
func podArgs(t *testing.T, ns, name string) []string {
	t.Helper()
	var d appsv1.Deployment
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d)).To(gomega.Succeed())
	return d.Spec.Template.Spec.Containers[0].Args
}

// forbidden reports whether err is the API server's 403.
func forbidden(err error) bool { return apierrors.IsForbidden(err) }

// readLines returns the lines of a file in the repository.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, path))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
