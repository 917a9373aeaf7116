//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// uninstallBlock returns the shell block of docs/operations.md's "Uninstall"
// between the markers <!-- uninstall-cleanup --> and
// <!-- /uninstall-cleanup -->, without its fences and list indentation: the
// procedure exactly as a user copies it.
func uninstallBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	_, rest, ok := strings.Cut(string(b), "<!-- uninstall-cleanup -->")
	newT(t).Expect(ok).To(gomega.BeTrue(), "docs/operations.md marks the clean-up block")
	block, _, ok := strings.Cut(rest, "<!-- /uninstall-cleanup -->")
	newT(t).Expect(ok).To(gomega.BeTrue())
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimPrefix(l, "   ")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// releaseClusterObjects returns the cluster-scoped objects of the chart's
// kinds that carry release's instance label.
func releaseClusterObjects(t *testing.T, release string) []string {
	t.Helper()
	g := newT(t)
	sel := client.MatchingLabels{"app.kubernetes.io/instance": release}
	var out []string
	var roles rbacv1.ClusterRoleList
	g.Expect(k8s.List(t.Context(), &roles, sel)).To(gomega.Succeed())
	for _, o := range roles.Items {
		out = append(out, "ClusterRole/"+o.Name)
	}
	var bindings rbacv1.ClusterRoleBindingList
	g.Expect(k8s.List(t.Context(), &bindings, sel)).To(gomega.Succeed())
	for _, o := range bindings.Items {
		out = append(out, "ClusterRoleBinding/"+o.Name)
	}
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	g.Expect(k8s.List(t.Context(), &mutating, sel)).To(gomega.Succeed())
	for _, o := range mutating.Items {
		out = append(out, "MutatingWebhookConfiguration/"+o.Name)
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	g.Expect(k8s.List(t.Context(), &validating, sel)).To(gomega.Succeed())
	for _, o := range validating.Items {
		out = append(out, "ValidatingWebhookConfiguration/"+o.Name)
	}
	return out
}

// rerollKeys returns the reroll.dev/ keys of a map of labels or annotations.
func rerollKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "reroll.dev/") {
			out = append(out, k)
		}
	}
	return out
}

// TestUninstall_LeavesNoClusterObjectsAndCleansWorkloadsWithoutRolling runs
// docs/operations.md's "Uninstall": helm uninstall removes every
// cluster-scoped object of the release (ClusterRoles, bindings, the
// webhook configuration), and the documented clean-up block, run as
// written, removes every reroll.dev/ annotation and label from the
// workloads' metadata without rolling them.
func TestUninstall_LeavesNoClusterObjectsAndCleansWorkloadsWithoutRolling(t *testing.T) {
	g := newT(t)
	sys := newNamespace(t, "e2e-uninstall-sys-", restricted)
	app := newNamespace(t, "e2e-uninstall-app-", nil)
	const release = "reroll-leaving"
	_, err := helm(append([]string{"install", release, chartDir, "--namespace", sys, "--wait", "--timeout", "2m", "--set", "image.tag=e2e"},
		setFlags(map[string]any{"webhook.enabled": true, "replicas": 2})...)...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = helm("uninstall", release, "--namespace", sys, "--wait")
		}
	})
	g.Expect(releaseClusterObjects(t, release)).To(gomega.ContainElements(
		"ClusterRole/"+release, "ClusterRoleBinding/"+release, "MutatingWebhookConfiguration/"+release))

	// Reroll records and rolls a workload (the webhook's own flags left
	// out: the plane cannot route its Service to this process).
	createWorkload(t, app)
	var args []string
	for _, a := range podArgs(t, sys, release) {
		if !strings.HasPrefix(a, "--webhook") && a != "--enable-webhook" {
			args = append(args, a)
		}
	}
	kubeconfig, _ := serviceAccountKubeconfig(t, sys, release)
	p := startReroll(t, kubeconfig, args, map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"})
	expectCoreBehaviour(t, p, app)
	p.stop(t)
	// What --enable-webhook keeps on managed workloads.
	mutate(t, &appsv1.Deployment{}, app, "web", func(o client.Object) {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["reroll.dev/managed"] = "true"
		o.SetLabels(l)
	})
	before := deploymentIn(t, app, "web")
	g.Expect(rerollKeys(before.Annotations)).To(gomega.ContainElements("reroll.dev/observed", "reroll.dev/auto"))
	g.Expect(rerollKeys(before.Labels)).To(gomega.ConsistOf("reroll.dev/managed"))
	g.Expect(replicaSets(t, app)).To(gomega.HaveLen(3))

	_, err = helm("uninstall", release, "--namespace", sys, "--wait")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	uninstalled = true
	g.Expect(releaseClusterObjects(t, release)).To(gomega.BeEmpty(), "no orphaned cluster-scoped object")

	env := append(os.Environ(), "KUBECONFIG="+plane.Kubeconfig, "PATH="+filepath.Dir(kubectlBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := run(env, "bash", "-c", uninstallBlock(t))
	t.Logf("clean-up block: %v\n%s", err, out)

	after := deploymentIn(t, app, "web")
	g.Expect(rerollKeys(after.Annotations)).To(gomega.BeEmpty())
	g.Expect(rerollKeys(after.Labels)).To(gomega.BeEmpty())
	g.Expect(after.Annotations).To(gomega.Equal(withoutRerollKeys(before.Annotations)), "only Reroll's keys removed")
	g.Expect(out).To(gomega.ContainSubstring("deployment.apps/web annotated"), "the block ran kubectl")
	g.Expect(after.Spec.Template).To(gomega.Equal(before.Spec.Template), "the pod template is untouched")
	// (The Deployment's generation grows with each annotation removed: its
	// registry counts metadata.annotations changes too; the template is
	// what rolls.)
	g.Consistently(func() []appsv1.ReplicaSet { return replicaSets(t, app) }).Should(gomega.HaveLen(3), "nothing rolled")
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: app, Name: "app-config"}, &cm)).To(gomega.Succeed())
}

// withoutRerollKeys returns m without its reroll.dev/ keys; nil when none
// are left.
func withoutRerollKeys(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if strings.HasPrefix(k, "reroll.dev/") {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
