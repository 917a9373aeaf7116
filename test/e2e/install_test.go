//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restricted labels a namespace so that the API server admits only pods
// that meet the restricted Pod Security Standard.
var restricted = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}

// selectedLabel marks the namespaces the cluster-scope install's
// namespaceSelector selects.
const selectedLabel = "e2e.reroll.dev/selected"

// The tests below install Reroll and run it cluster-wide or in several
// namespaces, so they run one after the other, never in parallel: two
// Reroll instances that see the same workload would both act on it.

func TestHelmChart_ClusterScope(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "e2e-cluster-sys-", restricted)
	app := newNamespace(t, "e2e-cluster-app-", map[string]string{selectedLabel: "yes"})
	other := newNamespace(t, "e2e-cluster-other-", nil)

	// Two replicas (leader election), with every optional object the plane
	// can hold; the pods must pass the restricted Pod Security admission.
	helmInstall(t, "reroll", sys, map[string]any{
		"replicas":                    2,
		"namespaceSelector":           selectedLabel + "=yes",
		"podDisruptionBudget.enabled": true,
		"networkPolicy.enabled":       true,
		"dashboards.enabled":          true,
	})
	var cr rbacv1.ClusterRole
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: "reroll"}, &cr)).To(gomega.Succeed())
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: sys, Name: "reroll-dashboard"}, &cm)).To(gomega.Succeed())
	g.Expect(cm.Data).To(gomega.HaveKey("reroll.json"))

	// Least privilege, as the API server's authorizer sees it.
	expectAccess(t, sys, "reroll",
		[]access{
			{"list", "", "configmaps", ""}, {"watch", "", "secrets", ""}, {"get", "", "secrets", other},
			{"patch", "apps", "deployments", app}, {"list", "apps", "statefulsets", ""}, {"watch", "apps", "daemonsets", ""},
			{"create", "", "events", app}, {"patch", "", "events", app},
			{"list", "", "namespaces", ""}, {"watch", "", "namespaces", ""}, // Namespace annotations, namespaceSelector
			{"get", "coordination.k8s.io", "leases#reroll-leader", sys}, {"create", "coordination.k8s.io", "leases", sys}, {"update", "coordination.k8s.io", "leases#reroll-leader", sys},
			{"get", "", "secrets#reroll-digest-key", sys}, {"update", "", "secrets#reroll-digest-key", sys}, {"create", "", "secrets", sys},
		},
		[]access{
			// No pod access without podEviction.enabled.
			{"list", "", "pods", app}, {"watch", "", "pods", ""}, {"get", "", "pods", app}, {"create", "", "pods/eviction", app},
			{"update", "apps", "deployments", app}, {"delete", "apps", "deployments", app}, {"create", "apps", "deployments", app},
			{"update", "", "configmaps", app}, {"patch", "", "secrets", app}, {"delete", "", "configmaps", app},
			{"create", "", "pods", app}, {"delete", "", "pods", app}, {"patch", "", "pods", app}, {"list", "", "nodes", ""}, {"update", "", "namespaces", ""},
			{"get", "coordination.k8s.io", "leases", app}, {"delete", "coordination.k8s.io", "leases", sys},
			{"list", "apps", "replicasets", app}, {"delete", "batch", "cronjobs", app},
		})

	createWorkload(t, app)
	// An opted-in workload outside the namespace selector.
	outside := createOutsideWorkload(t, other)

	kubeconfig, _ := serviceAccountKubeconfig(t, sys, "reroll")
	args := podArgs(t, sys, "reroll")
	g.Expect(args).To(gomega.ContainElements("--enable-ha", "--namespace-selector="+selectedLabel+"=yes"))
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})
	expectCoreBehaviour(t, p, app)
	mutate(t, &corev1.ConfigMap{}, other, "outside", func(o client.Object) { o.(*corev1.ConfigMap).Data["k"] = "2" })

	// Metrics after 2 data changes, 1 label-only change and 1 unconsumed key
	// change in app, and 1 change outside the selector.
	rollouts := map[string]string{"kind": "Deployment", "namespace": app, "result": "success"}
	g.Eventually(func() float64 {
		return p.sample(t, "reroll_skipped_total", map[string]string{"reason": "out_of_scope"})
	}).Should(gomega.Equal(1.0))
	g.Eventually(func() float64 {
		return p.sample(t, "reroll_skipped_total", map[string]string{"reason": "no_consumed_key_changed"})
	}).Should(gomega.Equal(1.0))
	g.Expect(p.sample(t, "reroll_rollouts_total", rollouts)).To(gomega.Equal(2.0))
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"source_kind": "ConfigMap"})).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"source_kind": "Secret"})).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"result": "error"})).To(gomega.Equal(0.0))
	g.Expect(p.sample(t, "reroll_change_to_rollout_seconds", nil)).To(gomega.Equal(2.0))
	g.Expect(p.sample(t, "reroll_references", map[string]string{"source_kind": "ConfigMap"})).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "reroll_references", map[string]string{"source_kind": "Secret"})).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "leader_election_master_status", nil)).To(gomega.Equal(1.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "the chart's RBAC is enough: nothing was denied")
	g.Expect(deploymentIn(t, other, outside.Name).Spec.Template.Annotations).NotTo(gomega.HaveKey(configHashAnnotation))
	expectDashboardMetricsExist(t, p)
}

// TestHelmChart_DefaultInstallRunsWithItsOwnRBAC installs the chart with
// its defaults and runs Reroll with exactly the RBAC it grants (its
// ServiceAccount's token): no access to pods, read access to Namespaces, and
// the default features work.
func TestHelmChart_DefaultInstallRunsWithItsOwnRBAC(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "e2e-default-sys-", restricted)
	app := newNamespace(t, "e2e-default-app-", nil)
	helmInstall(t, "reroll", sys, nil)

	expectAccess(t, sys, "reroll",
		[]access{
			{"list", "", "configmaps", ""}, {"watch", "", "secrets", ""}, {"patch", "apps", "deployments", app},
			{"get", "", "namespaces", ""}, {"list", "", "namespaces", ""}, {"watch", "", "namespaces", ""},
		},
		[]access{
			{"list", "", "pods", ""}, {"watch", "", "pods", app}, {"get", "", "pods", app}, {"create", "", "pods/eviction", app},
		})

	createWorkload(t, app)
	// A workload that asks for a restart by eviction, which the default
	// leaves off: it is told why, and nothing else breaks. In its own
	// namespace, so that expectCoreBehaviour counts only app's ReplicaSets.
	other := newNamespace(t, "e2e-default-evict-", nil)
	createWorkload(t, other)
	mutate(t, &appsv1.Deployment{}, other, "web", func(o client.Object) {
		o.SetAnnotations(map[string]string{"reroll.dev/auto": "true", "reroll.dev/restart": "evict"})
	})

	kubeconfig, _ := serviceAccountKubeconfig(t, sys, "reroll")
	args := podArgs(t, sys, "reroll")
	g.Expect(args).NotTo(gomega.ContainElement("--enable-pod-eviction"))
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})
	expectCoreBehaviour(t, p, app)

	g.Eventually(func() []string {
		var events corev1.EventList
		g.Expect(k8s.List(t.Context(), &events, client.InNamespace(other))).To(gomega.Succeed())
		var out []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "web" && e.Reason == "EvictionDisabled" && e.Type == corev1.EventTypeWarning {
				out = append(out, e.Message)
			}
		}
		return out
	}).Should(gomega.ContainElement(gomega.ContainSubstring("--enable-pod-eviction")))
	g.Expect(p.log.String()).To(gomega.ContainSubstring("Not watching pods: restarts by eviction are off"))
	g.Expect(p.log.String()).NotTo(gomega.ContainSubstring("Not reading Namespace annotations"), "the default reads Namespaces")
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"namespace": app, "result": "success"})).To(gomega.Equal(2.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "the chart's RBAC is enough: nothing was denied")
}

func TestHelmChart_NamespaceScope(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "e2e-ns-sys-", restricted)
	appA := newNamespace(t, "e2e-ns-a-", nil)
	appB := newNamespace(t, "e2e-ns-b-", nil)
	other := newNamespace(t, "e2e-ns-other-", nil)

	helmInstall(t, "reroll", sys, map[string]any{"namespaces": []string{appA, appB}, "replicas": 2})
	// Roles in exactly the watched namespaces (and the leader election Role
	// in the release namespace); no ClusterRole at all.
	err := k8s.Get(t.Context(), client.ObjectKey{Name: "reroll"}, &rbacv1.ClusterRole{})
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "no ClusterRole: %v", err)
	var bindings rbacv1.ClusterRoleBindingList
	g.Expect(k8s.List(t.Context(), &bindings)).To(gomega.Succeed())
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			g.Expect(s.Namespace).NotTo(gomega.Equal(sys), "ClusterRoleBinding %s binds the ServiceAccount", b.Name)
		}
	}
	for _, ns := range []string{appA, appB} {
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "reroll"}, &rbacv1.Role{})).To(gomega.Succeed())
	}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: sys, Name: "reroll-leader-election"}, &rbacv1.Role{})).To(gomega.Succeed())

	expectAccess(t, sys, "reroll",
		[]access{
			{"list", "", "configmaps", appA}, {"watch", "", "secrets", appB}, {"patch", "apps", "deployments", appB},
			{"create", "", "events", appB}, {"update", "coordination.k8s.io", "leases#reroll-leader", sys},
		},
		[]access{
			{"list", "", "configmaps", ""}, {"list", "", "secrets", ""}, {"list", "", "secrets", other}, {"list", "", "secrets", sys},
			{"patch", "apps", "deployments", other}, {"list", "", "namespaces", ""}, {"update", "apps", "deployments", appA},
			{"create", "", "events", other}, {"get", "coordination.k8s.io", "leases", appA},
		})

	createWorkload(t, appB)
	kubeconfig, sa := serviceAccountKubeconfig(t, sys, "reroll")
	// The token itself is refused outside the scope: 403.
	_, err = sa.CoreV1().Secrets(other).List(t.Context(), metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "listing Secrets in %s: %v", other, err)
	_, err = sa.CoreV1().Secrets(appA).List(t.Context(), metav1.ListOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	args := podArgs(t, sys, "reroll")
	g.Expect(args).To(gomega.ContainElement("--namespaces=" + appA + "," + appB))
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})
	expectCoreBehaviour(t, p, appB)

	g.Eventually(func() float64 {
		return p.sample(t, "reroll_rollouts_total", map[string]string{"namespace": appB, "result": "success"})
	}).Should(gomega.Equal(2.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "nothing was denied")
}

// createOutsideWorkload creates an opted-in Deployment "outside" in ns that
// reads ConfigMap "outside".
func createOutsideWorkload(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	g := newT(t)
	labels := map[string]string{"app": "outside"}
	g.Expect(k8s.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside"}, Data: map[string]string{"k": "1"}})).To(gomega.Succeed())
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside", Annotations: map[string]string{"reroll.dev/auto": "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "outside"}}}}}}},
			},
		},
	}
	g.Expect(k8s.Create(t.Context(), d)).To(gomega.Succeed())
	return d
}

// featureMetrics are the dashboard's metrics that a Reroll without
// --enable-pod-eviction or --enable-projections does not serve, each with
// the file that registers it.
var featureMetrics = map[string]string{
	"reroll_evictions_total":                "internal/metrics/eviction.go",
	"reroll_eviction_blocked_seconds_total": "internal/metrics/eviction.go",
	"reroll_projections":                    "internal/projection/metrics.go",
	"reroll_projection_writes_total":        "internal/projection/metrics.go",
	"reroll_projection_failures_total":      "internal/projection/metrics.go",
}

// registers tells whether file (from the repository root) registers the
// metric name (`Name: "name"`).
func registers(t *testing.T, file, name string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return regexp.MustCompile(`Name:\s*"` + regexp.QuoteMeta(name) + `"`).Match(b)
}

// expectDashboardMetricsExist checks that every metric the Grafana
// dashboard queries is one the running binary exports, so the dashboard
// cannot silently go blank after a rename.
func expectDashboardMetricsExist(t *testing.T, p *process) {
	t.Helper()
	g := newT(t)
	families := p.scrape(t)
	names := regexp.MustCompile(`\b(reroll|controller_runtime|workqueue|rest_client|leader_election|process|go)_[a-z0-9_]+\b`)
	var missing []string
	for _, line := range readLines(t, "charts/reroll/dashboards/reroll.json") {
		if !strings.Contains(line, `"expr"`) && !strings.Contains(line, `"query"`) {
			continue
		}
		for _, name := range names.FindAllString(line, -1) {
			base := name
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if f, ok := families[strings.TrimSuffix(name, suffix)]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
					base = strings.TrimSuffix(name, suffix)
				}
			}
			if _, ok := families[base]; ok || slices.Contains(missing, name) {
				continue
			}
			// Served only once its feature is on and has acted, which this
			// run's Reroll has not: the code must still register it by
			// that name.
			if file, gated := featureMetrics[base]; gated && registers(t, file, base) {
				continue
			}
			missing = append(missing, name)
		}
	}
	g.Expect(missing).To(gomega.BeEmpty(), "the dashboard queries metrics that reroll does not export")
}

// TestHelmChart_ReleaseNamespaceWithoutSecrets installs the chart watching
// only its own namespace and ignoring Secrets: Reroll then has no access to
// Secrets at all, and still becomes ready (it starts no Secret informer) and
// rolls on ConfigMap changes.
func TestHelmChart_ReleaseNamespaceWithoutSecrets(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t, "e2e-own-", nil)
	helmInstall(t, "reroll", ns, map[string]any{"watchGlobally": false, "ignoreSecrets": true})
	expectAccess(t, ns, "reroll",
		[]access{{"list", "", "configmaps", ns}, {"patch", "apps", "deployments", ns}},
		[]access{{"get", "", "secrets", ns}, {"list", "", "secrets", ns}, {"watch", "", "secrets", ns}, {"list", "", "configmaps", ""}})

	createWorkload(t, ns)
	kubeconfig, _ := serviceAccountKubeconfig(t, ns, "reroll")
	args := podArgs(t, ns, "reroll")
	g.Expect(args).To(gomega.ContainElements("--namespaces="+ns, "--resources-to-ignore=secrets"))
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": ns, "POD_NAME": "reroll-e2e"})
	expectFirstSight(t, p, ns, 1, 0)

	mutate(t, &corev1.Secret{}, ns, "db", func(o client.Object) { o.(*corev1.Secret).Data["password"] = []byte("two") })
	g.Consistently(func() map[string]string { return deploymentIn(t, ns, "web").Spec.Template.Annotations }).ShouldNot(gomega.HaveKey(configHashAnnotation))
	mutate(t, &corev1.ConfigMap{}, ns, "app-config", func(o client.Object) { o.(*corev1.ConfigMap).Data["LOG_LEVEL"] = "debug" })
	g.Eventually(func() map[string]string { return deploymentIn(t, ns, "web").Spec.Template.Annotations }).Should(gomega.HaveKey(configHashAnnotation))
	g.Expect(p.sample(t, "reroll_references", map[string]string{"source_kind": "Secret"})).To(gomega.Equal(0.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "nothing was denied")
}
