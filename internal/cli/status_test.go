package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/controller"
)

func TestStatus_ShowsLeaderMetricsAndInvalidAnnotations(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A free port for the metrics endpoint.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1"}),
		deployment(ns, "typo", map[string]string{"reroll.dev/auto": "yes please"}, pod(container(envFromConfigMap("cfg")))),
	)
	startReroll(t, ns, controller.Options{}, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = "reroll-leader"
		o.LeaderElectionNamespace = ns
		o.LeaderElectionReleaseOnCancel = true
		o.Metrics = metricsserver.Options{BindAddress: addr}
	})

	var r statusReport
	g.Eventually(func() []workloadEvent {
		out, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", fmt.Sprintf("http://someone:secret@%s/metrics", addr), "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(out).NotTo(gomega.ContainSubstring("secret@"))
		r = statusReport{}
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r.InvalidAnnotations
	}).Should(gomega.HaveLen(1))
	g.Expect(r.InvalidAnnotations[0].Workload).To(gomega.Equal("Deployment " + ns + "/typo"))
	g.Expect(r.InvalidAnnotations[0].Message).To(gomega.ContainSubstring(`annotation reroll.dev/auto: value "yes please" is not a boolean`))
	g.Expect(r.Leader).NotTo(gomega.BeNil())
	g.Expect(r.Leader.Holder).NotTo(gomega.BeEmpty())
	g.Expect(r.Metrics).NotTo(gomega.BeNil())
	g.Expect(r.Metrics.Source).To(gomega.Equal(fmt.Sprintf("http://someone:xxxxx@%s/metrics", addr)))
	g.Expect(r.MetricsProblem).To(gomega.BeEmpty())

	// -o name: the workloads that need attention, as kubectl names them.
	names, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", "http://"+addr+"/metrics", "-o", "name")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(names).To(gomega.Equal("deployment.apps/typo\n"))

	table, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", "http://"+addr+"/metrics")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("Leader:      " + r.Leader.Holder))
	g.Expect(table).To(gomega.MatchRegexp(`queue depth \d+, reconcile errors \d+`))
	g.Expect(table).To(gomega.ContainSubstring("Deployment " + ns + "/typo"))
}

// TestStatus_ReadsSecureMetricsWithABearerToken: Reroll's metrics are
// served over HTTPS to clients the API server authenticates and authorizes
// (controller-runtime's filters.WithAuthenticationAndAuthorization, as
// cmd/reroll sets up with --metrics-secure). The API server's pod proxy
// removes the caller's credentials, so through it the plugin got 401; it
// now says so and how to read them instead (kubectl port-forward and
// --metrics-url), and sends a bearer token to an https --metrics-url:
// --metrics-token-file's, or the kubeconfig's.
func TestStatus_ReadsSecureMetricsWithABearerToken(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	startReroll(t, ns, controller.Options{}, func(o *ctrl.Options) {
		o.Metrics = metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
	})

	// Two ServiceAccounts; only the scraper may get /metrics.
	cs, err := kubernetes.NewForConfig(plane.Config)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tokenFile := func(sa string) (string, string) {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		path := filepath.Join(t.TempDir(), sa)
		g.Expect(os.WriteFile(path, []byte(tok.Status.Token+"\n"), 0o600)).To(gomega.Succeed())
		return path, tok.Status.Token
	}
	scraperFile, scraperToken := tokenFile("scraper")
	strangerFile, _ := tokenFile("stranger")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "reroll-cli-metrics-reader-"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	create(t, role)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), role) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "reroll-cli-metrics-reader-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}}}
	create(t, binding)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
	// The scraper may also view the namespace, so that the plugin's other
	// reads (pods, Events) are answered when it runs as the scraper.
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scraper-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}}})

	secure := "https://" + addr + "/metrics"
	// status runs the plugin with args and returns its report.
	status := func(g gomega.Gomega, args ...string) statusReport {
		out, err := kubectlReroll(t, append([]string{"-n", ns, "status", "--reroll-namespace", ns, "-o", "json"}, args...)...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r statusReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	// Positive control: the scraper's token reads the metrics (the binding
	// may take a moment to reach the authorizer).
	g.Eventually(func(g gomega.Gomega) {
		r := status(g, "--metrics-url", secure, "--metrics-insecure-skip-tls-verify", "--metrics-token-file", scraperFile)
		g.Expect(r.MetricsProblem).To(gomega.BeEmpty())
		g.Expect(r.Metrics).NotTo(gomega.BeNil())
	}).Should(gomega.Succeed())

	// The kubeconfig's bearer token is sent when no file is given.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"plane": {Server: plane.Config.Host, CertificateAuthorityData: plane.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"scraper": {Token: scraperToken}},
		Contexts:       map[string]*clientcmdapi.Context{"scraper": {Cluster: "plane", AuthInfo: "scraper", Namespace: ns}},
		CurrentContext: "scraper",
	}, kubeconfig)).To(gomega.Succeed())
	r := status(g, "--kubeconfig", kubeconfig, "--metrics-url", secure, "--metrics-insecure-skip-tls-verify")
	g.Expect(r.MetricsProblem).To(gomega.BeEmpty())
	g.Expect(r.Metrics).NotTo(gomega.BeNil())

	// Each failure names its fix.
	for name, tc := range map[string]struct {
		// args are the plugin's; want is in the problem it reports.
		args []string
		want string
	}{
		"a token without the permission": {args: []string{"--metrics-url", secure, "--metrics-insecure-skip-tls-verify", "--metrics-token-file", strangerFile},
			want: "HTTP 403: the token's user may not get the non-resource URL /metrics"},
		"a kubeconfig with a client certificate and no token": {args: []string{"--metrics-url", secure, "--metrics-insecure-skip-tls-verify"},
			want: "pass --metrics-token-file"},
		"the certificate is verified unless told": {args: []string{"--metrics-url", secure, "--metrics-token-file", scraperFile},
			want: "certificate"},
		"plain HTTP to the secure port": {args: []string{"--metrics-url", "http://" + addr + "/metrics"},
			want: "use an https URL"},
	} {
		r := status(g, tc.args...)
		g.Expect(r.Metrics).To(gomega.BeNil(), name)
		g.Expect(r.MetricsProblem).To(gomega.ContainSubstring(tc.want), name)
	}

	// Through the API server's pod proxy, a pod of Reroll with secure
	// metrics (as the chart runs it) is not asked: the proxy would drop the
	// token.
	labels := map[string]string{"app.kubernetes.io/name": "reroll"}
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(container(func(c *corev1.Container) {
				c.Args = []string{"--metrics-secure=true", "--metrics-token-secret=reroll-metrics-token"}
			}))}},
	})
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(status(g).MetricsProblem).To(gomega.And(
			gomega.ContainSubstring("the API server's pod proxy forwards no credentials"),
			gomega.ContainSubstring("kubectl -n "+ns+" port-forward pod/reroll-"),
			gomega.ContainSubstring("--metrics-url https://localhost:9090/metrics")))
	}).Should(gomega.Succeed())
}
