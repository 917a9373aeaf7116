//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/test/controlplane"
)

// namespacedCRDKinds are the kinds of the chart whose CRDs the local plane
// does not serve (the Prometheus Operator's, the VPA's), so discovery cannot
// tell their scope: all are namespaced, as their CRDs declare.
var namespacedCRDKinds = map[schema.GroupKind]bool{
	{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}:          true,
	{Group: "monitoring.coreos.com", Kind: "PodMonitor"}:              true,
	{Group: "monitoring.coreos.com", Kind: "PrometheusRule"}:          true,
	{Group: "autoscaling.k8s.io", Kind: "VerticalPodAutoscaler"}:      true,
	{Group: "cert-manager.io", Kind: "Certificate"}:                   true,
	{Group: "cert-manager.io", Kind: "Issuer"}:                        true,
	{Group: "reroll.dev", Kind: "Projection"}:                         true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: false,
}

// clusterScoped returns the objects that are not namespaced, by the API
// server's discovery (namespacedCRDKinds for kinds it does not serve).
func clusterScoped(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		namespaced, known := namespacedCRDKinds[gk]
		if !known {
			m, err := k8s.RESTMapper().RESTMapping(gk, o.GroupVersionKind().Version)
			newT(t).Expect(err).NotTo(gomega.HaveOccurred(), "the scope of %s", gk)
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
		if !namespaced {
			out = append(out, o.GetKind()+"/"+o.GetName())
		}
	}
	return out
}

// The namespace-scoped install promised "no ClusterRole", but its default
// secure metrics rendered two ClusterRoles and a ClusterRoleBinding
// (TokenReview, SubjectAccessReview): a team without cluster rights could not
// install it. Secure metrics now check a token Reroll keeps in its own
// namespace, and nothing of a namespace-scoped render is cluster-scoped,
// monitors, alerts, dashboards, network policy, budget and leader election
// included. Cluster scope keeps its ClusterRole and binding (positive
// control of the scope check).
func TestHelmChart_NamespaceScopeRendersNoClusterScopedObject(t *testing.T) {
	t.Parallel()
	everything := map[string]any{
		"serviceMonitor.enabled": true, "podMonitor.enabled": true, "prometheusRule.enabled": true,
		"dashboards.enabled": true, "networkPolicy.enabled": true, "podDisruptionBudget.enabled": true,
		"replicas": 2, "podEviction.enabled": true, "csiIntegration.enabled": true,
	}
	with := func(values map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range everything {
			out[k] = v
		}
		for k, v := range values {
			out[k] = v
		}
		return out
	}
	cases := map[string]struct {
		// values are the chart values set.
		values map[string]any
		// want are the cluster-scoped objects rendered.
		want []string
	}{
		"the release namespace, defaults":              {values: map[string]any{"watchGlobally": false}},
		"a namespaces list, defaults":                  {values: map[string]any{"namespaces": []string{"a", "b"}}},
		"the release namespace, every optional object": {values: with(map[string]any{"watchGlobally": false})},
		"a namespaces list, every optional object":     {values: with(map[string]any{"namespaces": []string{"a", "b"}})},
		"plain metrics in the release namespace":       {values: map[string]any{"watchGlobally": false, "metrics.secure": false}},
		"cluster scope (its ClusterRole and binding)":  {want: []string{"ClusterRole/r-reroll", "ClusterRoleBinding/r-reroll"}},
		"cluster scope with the API server's metrics auth": {
			values: map[string]any{"metrics.auth": "kubernetes"},
			want: []string{"ClusterRole/r-reroll", "ClusterRoleBinding/r-reroll",
				"ClusterRole/r-reroll-metrics-auth", "ClusterRoleBinding/r-reroll-metrics-auth", "ClusterRole/r-reroll-metrics-reader"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := renderChart(t, tc.values)
			newT(t).Expect(clusterScoped(t, objs)).To(gomega.ConsistOf(tc.want))
		})
	}
}

// Settings that cannot work are refused with the fix: the API server's
// metrics authorization needs a ClusterRole; a monitor cannot send
// Prometheus's own token; a monitor reads its token from its own namespace.
func TestHelmChart_RefusesMetricsSettingsThatCannotWork(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// values are the chart values set; want is in the error.
		values map[string]any
		want   string
	}{
		"API server metrics auth in namespace scope": {
			values: map[string]any{"watchGlobally": false, "metrics.auth": "kubernetes"},
			want:   "metrics.auth=kubernetes needs a ClusterRole",
		},
		"a ServiceMonitor with the API server's metrics auth": {
			values: map[string]any{"serviceMonitor.enabled": true, "metrics.auth": "kubernetes"},
			want:   "serviceMonitor.enabled with metrics.auth=kubernetes",
		},
		"a PodMonitor in another namespace with secure metrics": {
			values: map[string]any{"podMonitor.enabled": true, "podMonitor.namespace": "monitoring"},
			want:   "podMonitor.namespace monitoring with metrics.secure",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := helm(append([]string{"template", "r", chartDir, "--namespace", "reroll-system"}, setFlags(tc.values)...)...)
			newT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)))
		})
	}
	// Positive control: plain metrics in another namespace work.
	_, err := helm(append([]string{"template", "r", chartDir, "--namespace", "reroll-system"},
		setFlags(map[string]any{"podMonitor.enabled": true, "podMonitor.namespace": "monitoring", "metrics.secure": false})...)...)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
}

// TestHelmChart_NamespaceAdminInstallsAndMonitorsScrape is a platform
// team's first step: a user with only the admin role in one namespace
// installs the namespace-scoped chart (helm impersonates that user against
// the API server, so its authorizer, escalation checks included, decides),
// Reroll runs with the RBAC the chart grants, and a scraper configured as
// the chart's ServiceMonitor and PodMonitor say (scheme, the token Secret
// and key, TLS) reads reroll_* metrics from the real metrics server; without
// the token it reads nothing.
func TestHelmChart_NamespaceAdminInstallsAndMonitorsScrape(t *testing.T) {
	t.Parallel()
	g := newT(t)
	sys := newNamespace(t, "e2e-ns-admin-", restricted)
	user := "e2e-team-admin-" + sys
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: "team-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	g.Expect(k8s.Create(t.Context(), binding)).To(gomega.Succeed())
	values := map[string]any{"watchGlobally": false}

	// Negative control of the impersonation: this user cannot install the
	// cluster-scoped chart.
	_, err := helm("install", "reroll-cluster", chartDir, "--namespace", sys, "--kube-as-user", user, "--set", "image.tag=e2e")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("forbidden")), "the cluster-scoped chart needs cluster rights")
	_, _ = helm("uninstall", "reroll-cluster", "--namespace", sys, "--kube-as-user", user)

	args := append([]string{"install", "reroll", chartDir, "--namespace", sys, "--wait", "--timeout", "2m",
		"--kube-as-user", user, "--set", "image.tag=e2e"}, setFlags(values)...)
	_, err = helm(args...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		if _, err := helm("uninstall", "reroll", "--namespace", sys, "--wait", "--kube-as-user", user); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})
	manifest, err := helm("get", "manifest", "reroll", "--namespace", sys)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	installed := decodeAll(t, manifest)
	g.Expect(only(installed, "Role")).NotTo(gomega.BeEmpty())
	g.Expect(clusterScoped(t, installed)).To(gomega.BeEmpty())

	// Reroll with its ServiceAccount's token and the pod's arguments, metrics
	// as shipped (secure, with the token Secret it creates).
	createWorkload(t, sys)
	kubeconfig, _ := serviceAccountKubeconfig(t, sys, "reroll")
	podArgs := podArgs(t, sys, "reroll")
	g.Expect(podArgs).To(gomega.ContainElements("--metrics-secure=true", "--metrics-token-secret=reroll-metrics-token", "--namespaces="+sys))
	p := startRerollAsShipped(t, kubeconfig, podArgs, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})
	p.useMetricsToken(t, sys, podArgs)
	expectFirstSight(t, p, sys, 1, 1)
	mutate(t, &corev1.ConfigMap{}, sys, "app-config", func(o client.Object) { o.(*corev1.ConfigMap).Data["LOG_LEVEL"] = "debug" })
	g.Eventually(func() map[string]string { return deploymentIn(t, sys, "web").Spec.Template.Annotations }).Should(gomega.HaveKey(configHashAnnotation))

	// The monitors as the chart renders them for this release.
	out, err := helm(append([]string{"template", "reroll", chartDir, "--namespace", sys, "--set", "serviceMonitor.enabled=true", "--set", "podMonitor.enabled=true"}, setFlags(values)...)...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rendered := decodeAll(t, out)
	var endpoints []map[string]any
	for _, m := range only(rendered, "ServiceMonitor") {
		g.Expect(m.GetNamespace()).To(gomega.Equal(sys))
		for _, e := range nested(t, m, "spec", "endpoints") {
			endpoints = append(endpoints, e.(map[string]any))
		}
	}
	for _, m := range only(rendered, "PodMonitor") {
		g.Expect(m.GetNamespace()).To(gomega.Equal(sys))
		for _, e := range nested(t, m, "spec", "podMetricsEndpoints") {
			endpoints = append(endpoints, e.(map[string]any))
		}
	}
	g.Expect(endpoints).To(gomega.HaveLen(2), "one ServiceMonitor endpoint, one PodMonitor endpoint")
	for _, e := range endpoints {
		g.Expect(e).NotTo(gomega.HaveKey("bearerTokenFile"), "deprecated, and needs a binding made by hand")
		scheme, _ := e["scheme"].(string)
		g.Expect(scheme).To(gomega.Equal("https"))
		auth, _ := e["authorization"].(map[string]any)
		g.Expect(auth).To(gomega.HaveKeyWithValue("type", "Bearer"))
		ref, _ := auth["credentials"].(map[string]any)
		tlsConfig, _ := e["tlsConfig"].(map[string]any)
		skip, _ := tlsConfig["insecureSkipVerify"].(bool)

		// What the Prometheus Operator does: read the key of the Secret in
		// the monitor's namespace, send it as the Authorization header.
		var secret corev1.Secret
		g.Eventually(func() error {
			return k8s.Get(t.Context(), client.ObjectKey{Namespace: sys, Name: ref["name"].(string)}, &secret)
		}).Should(gomega.Succeed(), "Reroll created the token Secret")
		token := secret.Data[ref["key"].(string)]
		g.Expect(token).NotTo(gomega.BeEmpty())

		scrape := func(authorization string) (int, string) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, scheme+"://"+p.metricsAddr+e["path"].(string), nil)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: skip}}} //nolint:gosec // as the monitor says: a self-signed certificate
			resp, err := c.Do(req)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			return resp.StatusCode, string(body)
		}
		code, body := scrape(auth["type"].(string) + " " + string(token))
		g.Expect(code).To(gomega.Equal(http.StatusOK))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(families).To(gomega.HaveKey("reroll_rollouts_total"))

		code, body = scrape("")
		g.Expect(code).To(gomega.Equal(http.StatusUnauthorized), "no token")
		g.Expect(body).NotTo(gomega.ContainSubstring("reroll_"))
		code, _ = scrape("Bearer " + strings.Repeat("0", len(token)))
		g.Expect(code).To(gomega.Equal(http.StatusUnauthorized), "another token")
	}
	var secret corev1.Secret
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: sys, Name: "reroll-metrics-token"}, &secret)).To(gomega.Succeed())
	p.bearer = string(secret.Data["token"])
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"namespace": sys, "result": "success"})).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "the chart's RBAC is enough: nothing was denied")

	// kubectl reroll status, run by the namespace admin with no metrics
	// flag, reads these metrics as shipped: through a port-forward to the
	// chart's pod (kwok's server, the pod's kubelet, sends it on to this
	// Reroll) with the token of the Secret that Reroll created.
	forwardPods(t, sys, 9090, p.metricsAddr)
	g.Eventually(func(g gomega.Gomega) {
		out, errOut, code := kubectlReroll(t, "--as", user, "-n", sys, "status", "--reroll-namespace", sys, "-o", "json")
		g.Expect(code).To(gomega.Equal(0), errOut)
		var r struct {
			Metrics *struct {
				Source   string  `json:"source"`
				Rollouts float64 `json:"rollouts"`
			} `json:"metrics"`
			MetricsProblem string `json:"metricsProblem"`
		}
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		g.Expect(r.MetricsProblem).To(gomega.BeEmpty())
		g.Expect(r.Metrics).NotTo(gomega.BeNil())
		g.Expect(r.Metrics.Source).To(gomega.MatchRegexp(`^pods/reroll-.* via port-forward$`))
		g.Expect(r.Metrics.Rollouts).To(gomega.Equal(1.0))
	}).Should(gomega.Succeed())
}

// forwardPods makes kwok's server, which stands in for the kubelet of the
// plane's pods, send a port-forward to port of any pod in namespace ns on to
// target (HOST:PORT) until the test ends (controlplane.ClusterPortForward*).
func forwardPods(t *testing.T, ns string, port int32, target string) {
	t.Helper()
	g := newT(t)
	host, p, err := net.SplitHostPort(target)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	targetPort, err := strconv.Atoi(p)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlplane.ClusterPortForwardGroupVersion, "kind": "ClusterPortForward",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{ns}},
			"forwards": []any{map[string]any{"ports": []any{int64(port)}, "target": map[string]any{"address": host, "port": int64(targetPort)}}},
		},
	}}
	g.Expect(k8s.Create(t.Context(), u)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
}

// A namespace admin may grant only what the admin role holds, and it holds
// Argo Rollouts and DeploymentConfigs only where their CRDs are installed
// (their aggregate-to-admin roles): the namespace-scoped Role names them
// only where the API server serves them at install. Cluster scope always
// names them.
func TestHelmChart_NamespaceScopeGrantsOtherKindsWhereServed(t *testing.T) {
	t.Parallel()
	g := newT(t)
	rules := func(args ...string) string {
		out, err := helm(append([]string{"template", "r", chartDir, "--namespace", "reroll-system", "--show-only", "templates/rbac.yaml"}, args...)...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return out
	}
	served := rules("--set", "watchGlobally=false", "--api-versions", "argoproj.io/v1alpha1", "--api-versions", "apps.openshift.io/v1")
	g.Expect(served).To(gomega.And(gomega.ContainSubstring("rollouts"), gomega.ContainSubstring("deploymentconfigs")))
	notServed := rules("--set", "watchGlobally=false")
	g.Expect(notServed).To(gomega.ContainSubstring("deployments"))
	g.Expect(notServed).NotTo(gomega.Or(gomega.ContainSubstring("rollouts"), gomega.ContainSubstring("deploymentconfigs")))
	g.Expect(rules()).To(gomega.And(gomega.ContainSubstring("rollouts"), gomega.ContainSubstring("deploymentconfigs")), "cluster scope")
}
