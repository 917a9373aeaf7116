package controller

import (
	"testing"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	r := startRerollAs(t, cfg, ns, Options{Kinds: []workload.Kind{workload.Deployment{}}})
	g.Expect(r.logs.String()).To(gomega.ContainSubstring(`missing RBAC permission: list on pods (group \"\") in namespace ` + ns))

	expectDeploymentRolls(t, ns)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "evicted", ReasonNotRolled) }).Should(gomega.ContainElement(
		gomega.ContainSubstring("Reroll may not list, watch or evict pods")))
	g.Expect(get(t, evicted).Spec.Template.Annotations).NotTo(gomega.HaveKey("reroll.dev/config-hash"), "a workload restarted by eviction keeps its template")
}
