package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/metricsauth"
	"github.com/reroll/reroll/test/controlplane"
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
// (metricsauth.ReviewFilter, as cmd/reroll sets up with --metrics-secure). The API server's pod proxy
// removes the caller's credentials, so through it the plugin got 401; it
// now says so and how to read them instead (kubectl port-forward and
// --metrics-url), and sends a bearer token to an https --metrics-url:
// --metrics-token-file's, or the kubeconfig's only to a verified endpoint.
func TestStatus_ReadsSecureMetricsWithABearerToken(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	startReroll(t, ns, controller.Options{}, func(o *ctrl.Options) {
		o.Metrics = metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: metricsauth.ReviewFilter}
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

	// The kubeconfig's bearer token is never sent to an endpoint whose
	// certificate is not verified (the third review: the plugin forwarded
	// the user's own credentials there).
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"plane": {Server: plane.Config.Host, CertificateAuthorityData: plane.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"scraper": {Token: scraperToken}},
		Contexts:       map[string]*clientcmdapi.Context{"scraper": {Cluster: "plane", AuthInfo: "scraper", Namespace: ns}},
		CurrentContext: "scraper",
	}, kubeconfig)).To(gomega.Succeed())
	r := status(g, "--kubeconfig", kubeconfig, "--metrics-url", secure, "--metrics-insecure-skip-tls-verify")
	g.Expect(r.Metrics).To(gomega.BeNil())
	g.Expect(r.MetricsProblem).To(gomega.ContainSubstring("the kubeconfig's credentials are never sent"))

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

	// A pod of Reroll whose metrics the API server authorizes (no
	// --metrics-token-secret, the chart's metrics.auth=kubernetes) is read
	// through a port-forward with --metrics-token-file's token; without
	// one, the plugin says to pass it and sends none of the kubeconfig's.
	forwardPods(t, ns, 9090, addr)
	labels := map[string]string{"app.kubernetes.io/name": "reroll"}
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(container(func(c *corev1.Container) {
				c.Args = []string{"--metrics-secure=true"}
				c.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
			}))}},
	})
	g.Eventually(func(g gomega.Gomega) {
		r := status(g, "--metrics-token-file", scraperFile)
		g.Expect(r.MetricsProblem).To(gomega.BeEmpty())
		g.Expect(r.Metrics).NotTo(gomega.BeNil())
		g.Expect(r.Metrics.Source).To(gomega.MatchRegexp(`^pods/reroll-.* via port-forward$`))
	}).Should(gomega.Succeed())
	g.Expect(status(g).MetricsProblem).To(gomega.ContainSubstring("the plugin never sends your own credentials to a pod: pass --metrics-token-file"))
	g.Expect(status(g, "--metrics-token-file", strangerFile).MetricsProblem).To(gomega.ContainSubstring("HTTP 403: the token's user may not get the non-resource URL /metrics"))
}

// TestStatus_ReadsTheChartsSecureMetricsByDefault: as the chart runs Reroll
// (--metrics-secure with --metrics-token-secret), `status` with no metrics
// flag reads the metrics through a port-forward with the token of that
// Secret, for a user with namespace admin rights (Kubernetes' admin
// ClusterRole) in Reroll's namespace; a user who may not read the Secret or
// may not port-forward is told which permission is missing.
func TestStatus_ReadsTheChartsSecureMetricsByDefault(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	// The token Secret as cmd/reroll creates it (metricsauth.LoadToken) and
	// its filter, as cmd/reroll serves them with --metrics-token-secret.
	token, err := metricsauth.LoadToken(t.Context(), k8s, types.NamespacedName{Namespace: ns, Name: "reroll-metrics-token"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	startReroll(t, ns, controller.Options{}, func(o *ctrl.Options) {
		o.Metrics = metricsserver.Options{BindAddress: addr, SecureServing: true,
			FilterProvider: func(*rest.Config, *http.Client) (metricsserver.Filter, error) { return metricsauth.Filter(token), nil }}
	})
	forwardPods(t, ns, 9090, addr)
	labels := map[string]string{"app.kubernetes.io/name": "reroll"}
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(container(func(c *corev1.Container) {
				// The chart's arguments (templates/deployment.yaml).
				c.Args = []string{"--metrics-bind-address=:9090", "--metrics-secure=true", "--metrics-token-secret=reroll-metrics-token"}
				c.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
			}))}},
	})

	// Users as ServiceAccounts with kubeconfigs of their tokens.
	cs, err := kubernetes.NewForConfig(plane.Config)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	user := func(name string, roles ...rbacv1.RoleRef) string {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		for _, ref := range roles {
			create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"}, RoleRef: ref,
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}})
		}
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		path := filepath.Join(t.TempDir(), name)
		g.Expect(clientcmd.WriteToFile(clientcmdapi.Config{
			Clusters:       map[string]*clientcmdapi.Cluster{"plane": {Server: plane.Config.Host, CertificateAuthorityData: plane.Config.CAData}},
			AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tok.Status.Token}},
			Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "plane", AuthInfo: name, Namespace: ns}},
			CurrentContext: name,
		}, path)).To(gomega.Succeed())
		return path
	}
	clusterRole := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	readSecret := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-metrics-token"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"reroll-metrics-token"}, Verbs: []string{"get"}}}}
	create(t, readSecret)
	admin := user("admin", clusterRole("admin"))
	viewer := user("viewer", clusterRole("view"))
	noForward := user("no-forward", clusterRole("view"), rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: readSecret.Name})

	status := func(g gomega.Gomega, kubeconfig string) statusReport {
		out, err := kubectlReroll(t, "--kubeconfig", kubeconfig, "-n", ns, "status", "--reroll-namespace", ns, "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r statusReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	// Positive first: namespace admin reads them, with no flag.
	g.Eventually(func(g gomega.Gomega) {
		r := status(g, admin)
		g.Expect(r.MetricsProblem).To(gomega.BeEmpty())
		g.Expect(r.Metrics).NotTo(gomega.BeNil())
		g.Expect(r.Metrics.Source).To(gomega.MatchRegexp(`^pods/reroll-.* via port-forward$`))
	}).Should(gomega.Succeed())
	// Each missing permission is named.
	r := status(g, viewer)
	g.Expect(r.Metrics).To(gomega.BeNil())
	g.Expect(r.MetricsProblem).To(gomega.ContainSubstring("you may not get Secret " + ns + "/reroll-metrics-token"))
	r = status(g, noForward)
	g.Expect(r.Metrics).To(gomega.BeNil())
	g.Expect(r.MetricsProblem).To(gomega.ContainSubstring("you may not create pods/portforward in namespace " + ns))

	// A pod whose metrics port does not answer: the plugin says so.
	closed := newNamespace(t)
	l, err = net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	nobody := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	_, err = metricsauth.LoadToken(t.Context(), k8s, types.NamespacedName{Namespace: closed, Name: "reroll-metrics-token"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	forwardPods(t, closed, 9090, nobody)
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: closed, Name: "reroll"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(container(func(c *corev1.Container) {
				c.Args = []string{"--metrics-bind-address=:9090", "--metrics-secure=true", "--metrics-token-secret=reroll-metrics-token"}
				c.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
			}))}},
	})
	g.Eventually(func(g gomega.Gomega) {
		out, err := kubectlReroll(t, "-n", closed, "status", "--reroll-namespace", closed, "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r statusReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		g.Expect(r.Metrics).To(gomega.BeNil())
		g.Expect(r.MetricsProblem).To(gomega.And(gomega.ContainSubstring("via port-forward"), gomega.ContainSubstring("gave no answer on port 9090 through the port-forward")))
	}).Should(gomega.Succeed())
}

// forwardPods makes kwok's server send a port-forward to port of any pod
// in namespace ns to target (HOST:PORT), until the test ends.
func forwardPods(t *testing.T, ns string, port int32, target string) {
	t.Helper()
	host, p, err := net.SplitHostPort(target)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	targetPort, err := strconv.Atoi(p)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlplane.ClusterPortForwardGroupVersion, "kind": "ClusterPortForward",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{ns}},
			"forwards": []any{map[string]any{"ports": []any{int64(port)}, "target": map[string]any{"address": host, "port": int64(targetPort)}}},
		},
	}}
	create(t, u)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
}
