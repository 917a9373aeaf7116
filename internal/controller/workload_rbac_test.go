package controller

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/workload"
)

// serviceAccountConfig returns a client configuration that authenticates as
// a new ServiceAccount of ns bound to a Role with rules.
func serviceAccountConfig(t *testing.T, ns string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	g := newT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reroll"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reroll", Namespace: ns}},
	}
	create(t, sa, role, binding)
	cs, err := kubernetes.NewForConfig(plane.Config)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), "reroll", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cfg := rest.AnonymousClientConfig(plane.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg
}

func TestWorkloadReconciler_KindWithoutPermissionIsSkippedOthersWork(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// Everything Reroll needs for Deployments, and nothing for CronJobs.
	cfg := serviceAccountConfig(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	})
	r := startRerollAs(t, cfg, ns, Options{Kinds: []workload.Kind{workload.CronJob{}, workload.Deployment{}}})
	g.Expect(r.logs.String()).To(gomega.ContainSubstring(`missing RBAC permission: list on cronjobs (group \"batch\") in namespace ` + ns))

	expectDeploymentRolls(t, ns)
}

// expectDeploymentRolls checks that Reroll, running in ns, still does its
// main job there: an opted-in Deployment is recorded and rolls once when the
// ConfigMap it reads changes.
func expectDeploymentRolls(t *testing.T, ns string) {
	t.Helper()
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	newT(t).Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestEviction_WithoutPodPermissionsTemplatesStillRollAndEvictionWaits(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// Everything Reroll needs for Deployments, but no pods.
	cfg := serviceAccountConfig(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
	evicted := deployment(ns, "evicted", evictOn, podSpec(envFrom("cfg")))
	create(t, evicted)
	r := startRerollAs(t, cfg, ns, Options{PodEviction: true, Kinds: []workload.Kind{workload.Deployment{}}})
	g.Expect(r.logs.String()).To(gomega.ContainSubstring(`missing RBAC permission: list on pods (group \"\") in namespace ` + ns))

	expectDeploymentRolls(t, ns)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "evicted", ReasonEvictionDisabled) }).Should(gomega.ContainElement(
		gomega.ContainSubstring("list and watch on pods and create on pods/eviction")))
	g.Expect(get(t, evicted).Spec.Template.Annotations).NotTo(gomega.HaveKey("reroll.dev/config-hash"), "a workload restarted by eviction keeps its template")
}

// podRequests sums the requests counter counted on pods and their
// subresources, whatever the verb and answer.
func podRequests(counter *metrics.RequestCounter) int64 {
	var n int64
	for req, c := range counter.Counts() {
		if req.Resource == "pods" || strings.HasPrefix(req.Resource, "pods/") {
			n += c
		}
	}
	return n
}

func TestEviction_OffByDefault_NoPodAccessAndAWarningNamesTheFlag(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// Positive control: with --enable-pod-eviction, Reroll lists and
	// watches pods, so the counter below would see them.
	on := metrics.NewRequestCounter()
	onCfg := rest.CopyConfig(plane.Config)
	onCfg.Wrap(on.Wrap)
	control := startRerollAs(t, onCfg, ns, Options{PodEviction: true, Kinds: []workload.Kind{workload.Deployment{}}})
	g.Eventually(func() int64 { return podRequests(on) }).Should(gomega.BeNumerically(">", 0))
	control.stop(t)

	// The default, with the rules the default install grants in a
	// namespace (no pods at all), and every request counted.
	cfg := serviceAccountConfig(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
	counter := metrics.NewRequestCounter()
	cfg.Wrap(counter.Wrap)
	evicted := deployment(ns, "evicted", evictOn, podSpec(envFrom("cfg")))
	create(t, evicted)
	r := startRerollAs(t, cfg, ns, Options{Kinds: []workload.Kind{workload.Deployment{}}})
	g.Expect(r.logs.String()).To(gomega.ContainSubstring("restarts by eviction are off (--enable-pod-eviction)"))
	g.Expect(r.logs.String()).NotTo(gomega.ContainSubstring("missing RBAC permission"), "no permission is even checked for pods")

	// A workload that asks for eviction is told at once which flag is off.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "evicted", ReasonEvictionDisabled) }).Should(gomega.ContainElement(
		gomega.And(gomega.HavePrefix("Restart by eviction requested"), gomega.ContainSubstring("--enable-pod-eviction"))))
	g.Expect(warningEvents(t, ns, "evicted", ReasonEvictionDisabled)).NotTo(gomega.BeEmpty(), "the Event is a Warning")
	// Nothing else breaks: a template rollout works, and its change tells
	// the evict workload again that nothing restarts.
	expectDeploymentRolls(t, ns)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "evicted", ReasonEvictionDisabled) }).Should(gomega.ContainElement(
		gomega.HavePrefix("ConfigMap/cfg changed keys a; not restarted: restarts by eviction are off")))
	g.Expect(get(t, evicted).Spec.Template.Annotations).NotTo(gomega.HaveKey("reroll.dev/config-hash"), "a workload restarted by eviction keeps its template")
	g.Expect(podRequests(counter)).To(gomega.BeZero(), "no pod informer, no pod read, no eviction")
}

// warningEvents returns the notes of the Warning Events with reason on the
// object name of ns.
func warningEvents(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var list corev1.EventList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Message)
		}
	}
	return out
}
