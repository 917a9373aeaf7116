//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The one-file install, generated from config/default.
const oneFile = "deploy/reroll.yaml"

// TestManifests_UpToDate fails when `make manifests` would change
// config/rbac/role.yaml, a component's role or deploy/reroll.yaml: the RBAC markers, the
// Kustomize base and the one-file install move together.
func TestManifests_UpToDate(t *testing.T) {
	t.Parallel()
	g := newT(t)
	// As hack/manifests.sh: the base role from every package with markers
	// but internal/eviction, whose markers are --enable-pod-eviction's; each
	// opt-in component's role from its own markers.
	for committed, gen := range map[string][]string{
		"config/rbac/role.yaml":                        {"rbac:roleName=manager-role", "paths=./internal/controller/...;./internal/projection/...;./internal/scope/...;./internal/validator/...;./internal/workload/..."},
		"config/components/csi/role.yaml":              {"rbac:roleName=csi-role", "paths=./cmd/reroll/..."},
		"config/components/pod-eviction/role.yaml":     {"rbac:roleName=pod-eviction-role", "paths=./internal/eviction/..."},
		"config/components/versioned-config/role.yaml": {"rbac:roleName=versioned-config-role", "paths=./internal/pin/..."},
	} {
		out := t.TempDir()
		_, err := run(nil, controllerGenBin, append(gen, "output:rbac:artifacts:config="+out)...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		fresh, err := os.ReadFile(filepath.Join(out, "role.yaml"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		data, err := os.ReadFile(filepath.Join(root, committed))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(string(data)).To(gomega.Equal(string(fresh)), "%s is stale: run `make manifests`", committed)
	}

	rendered, err := run(nil, kubectlBin, "kustomize", "config/default")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	oneFileData, err := os.ReadFile(filepath.Join(root, oneFile))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, body, _ := strings.Cut(string(oneFileData), "do not edit.\n")
	g.Expect(body).To(gomega.Equal(rendered), "%s is stale: run `make manifests`", oneFile)
}

// TestManifests_ProjectionCRDUpToDate fails when `make manifests` would
// change the Projection CRD in config/crd/bases or the chart's copy.
func TestManifests_ProjectionCRDUpToDate(t *testing.T) {
	t.Parallel()
	g := newT(t)
	out := t.TempDir()
	_, err := run(nil, controllerGenBin, "crd", "paths=./api/...", "output:crd:artifacts:config="+out)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	fresh, err := os.ReadFile(filepath.Join(out, "reroll.dev_projections.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, path := range []string{"config/crd/bases/reroll.dev_projections.yaml", "charts/reroll/files/reroll.dev_projections.yaml"} {
		committed, err := os.ReadFile(filepath.Join(root, path))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(string(committed)).To(gomega.Equal(string(fresh)), "%s is stale: run `make manifests`", path)
	}
}

// TestManifests_MatchGeneratedRoleAndChart checks the one-file install's
// RBAC against the generated role (Namespaces included, pods not: see
// docs/security.md) and its image against the chart's appVersion.
func TestManifests_MatchGeneratedRoleAndChart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	data, err := os.ReadFile(filepath.Join(root, oneFile))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs := decodeAll(t, string(data))
	g.Expect(rulesOf(t, objs, "ClusterRole", "")).To(gomega.ConsistOf(generatedRules(t)))
	g.Expect(generatedRules(t)).To(gomega.ContainElement("|namespaces|list"))
	g.Expect(generatedRules(t)).NotTo(gomega.ContainElement(gomega.HavePrefix("|pods")), "no pod access by default")
	g.Expect(withoutDigestKeyRole(only(objs, "Role"))).To(gomega.BeEmpty(), "one replica needs no Lease")
	g.Expect(container(t, objs).Image).To(gomega.Equal("ghcr.io/reroll/reroll:" + chartAppVersion(t)))

	// With both components listed in config/default, as its comment says:
	// two replicas, leader election, the namespace selector.
	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS(filepath.Join(root, "config")))).To(gomega.Succeed())
	base := filepath.Join(dir, "default", "kustomization.yaml")
	k, err := os.ReadFile(base)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	k = append(k, "components:\n  - ../components/ha\n  - ../components/namespace-selector\n"...)
	g.Expect(os.WriteFile(base, k, 0o644)).To(gomega.Succeed())
	out, err := run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs = decodeAll(t, out)
	g.Expect(rulesOf(t, objs, "ClusterRole", "")).To(gomega.ConsistOf(generatedRules(t)))
	g.Expect(rulesOf(t, objs, "Role", "reroll-system")).To(gomega.ConsistOf(
		"coordination.k8s.io|leases|get", "coordination.k8s.io|leases|create", "coordination.k8s.io|leases|update",
		"|events|create", "|events|patch"))
	// The third review (Low): get and update on Reroll's Lease only.
	for _, o := range withoutDigestKeyRole(only(objs, "Role")) {
		for _, r := range convert[rbacv1.Role](t, o).Rules {
			if slices.Contains(r.Resources, "leases") && !slices.Equal(r.Verbs, []string{"create"}) {
				g.Expect(r.ResourceNames).To(gomega.Equal([]string{"reroll-leader"}), "%v", r.Verbs)
			}
		}
	}
	d := convert[appsv1.Deployment](t, only(objs, "Deployment")[0])
	g.Expect(*d.Spec.Replicas).To(gomega.BeEquivalentTo(2))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(gomega.ContainElements("--enable-ha", "--namespace-selector=reroll=enabled"))

	// The CSI component: its own ClusterRole, bound to Reroll's
	// ServiceAccount, and the flag.
	k = append(k, "  - ../components/csi\n"...)
	g.Expect(os.WriteFile(base, k, 0o644)).To(gomega.Succeed())
	out, err = run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs = decodeAll(t, out)
	var csiRole *unstructured.Unstructured
	for _, r := range only(objs, "ClusterRole") {
		if r.GetName() == "reroll-csi-role" {
			csiRole = r
		}
	}
	g.Expect(csiRole).NotTo(gomega.BeNil())
	g.Expect(expand(convert[rbacv1.ClusterRole](t, csiRole).Rules)).To(gomega.ConsistOf(generatedCSIRules(t)))
	var bound bool
	for _, b := range only(objs, "ClusterRoleBinding") {
		crb := convert[rbacv1.ClusterRoleBinding](t, b)
		if crb.RoleRef.Name == "reroll-csi-role" && len(crb.Subjects) == 1 && crb.Subjects[0].Name == "reroll-controller" && crb.Subjects[0].Namespace == "reroll-system" {
			bound = true
		}
	}
	g.Expect(bound).To(gomega.BeTrue(), "the CSI role is bound to Reroll's ServiceAccount")
	d = convert[appsv1.Deployment](t, only(objs, "Deployment")[0])
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(gomega.ContainElement("--enable-csi-integration"))
}

// TestManifests_OneFileInstall applies deploy/reroll.yaml to the plane, as
// `kubectl apply -f` would, and runs Reroll with its ServiceAccount's token
// and its args.
func TestManifests_OneFileInstall(t *testing.T) {
	g := newT(t)
	_, err := run(nil, kubectlBin, "--kubeconfig", plane.Kubeconfig, "apply", "--server-side", "-f", oneFile)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		if _, err := run(nil, kubectlBin, "--kubeconfig", plane.Kubeconfig, "delete", "--wait=false", "-f", oneFile); err != nil {
			t.Errorf("kubectl delete: %v", err)
		}
	})
	// The pod passes the restricted Pod Security admission of its namespace
	// and becomes ready (kwok marks it so; nothing runs).
	g.Eventually(func() int32 {
		var d appsv1.Deployment
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: "reroll-system", Name: "reroll-controller"}, &d)).To(gomega.Succeed())
		return d.Status.AvailableReplicas
	}).Should(gomega.BeEquivalentTo(1))
	var crb rbacv1.ClusterRoleBinding
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: "reroll-manager-rolebinding"}, &crb)).To(gomega.Succeed())

	app := newNamespace(t, "e2e-onefile-", nil)
	expectAccess(t, "reroll-system", "reroll-controller",
		[]access{{"list", "", "secrets", ""}, {"patch", "apps", "deployments", app}, {"create", "", "events", app}, {"list", "", "namespaces", ""}, {"watch", "", "namespaces", ""}},
		[]access{{"update", "apps", "deployments", app}, {"get", "coordination.k8s.io", "leases", "reroll-system"},
			{"list", "", "pods", ""}, {"watch", "", "pods", app}, {"create", "", "pods/eviction", app}})
	createWorkload(t, app)
	kubeconfig, _ := serviceAccountKubeconfig(t, "reroll-system", "reroll-controller")
	p := startReroll(t, kubeconfig, podArgs(t, "reroll-system", "reroll-controller"), map[string]string{"POD_NAMESPACE": "reroll-system", "POD_NAME": "reroll-e2e"})
	expectCoreBehaviour(t, p, app)
	g.Expect(p.sample(t, "reroll_rollouts_total", map[string]string{"namespace": app, "result": "success"})).To(gomega.Equal(2.0))
	g.Expect(p.sample(t, "rest_client_requests_total", map[string]string{"code": "403"})).To(gomega.Equal(0.0), "nothing was denied")
}

// TestManifests_WebhookComponent renders config/default with the webhook
// component and checks that the names in Reroll's args are those of the
// rendered objects, that the certificate rotation may update exactly those,
// and that the webhooks are the chart's.
func TestManifests_WebhookComponent(t *testing.T) {
	t.Parallel()
	g := newT(t)
	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS(filepath.Join(root, "config")))).To(gomega.Succeed())
	base := filepath.Join(dir, "default", "kustomization.yaml")
	k, err := os.ReadFile(base)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(os.WriteFile(base, append(k, "components:\n  - ../components/webhook\n"...), 0o644)).To(gomega.Succeed())
	out, err := run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs := decodeAll(t, out)

	args := map[string]string{}
	c := container(t, objs)
	for _, a := range c.Args {
		if name, value, ok := strings.Cut(a, "="); ok {
			args[name] = value
		}
	}
	g.Expect(c.Args).To(gomega.ContainElement("--enable-webhook"))
	names := func(kind string) []string {
		var out []string
		for _, o := range only(objs, kind) {
			out = append(out, o.GetName())
		}
		return out
	}
	g.Expect(names("Service")).To(gomega.ContainElement(args["--webhook-service"]))
	g.Expect(names("Secret")).To(gomega.ConsistOf(args["--webhook-cert-secret"]))
	g.Expect(names("MutatingWebhookConfiguration")).To(gomega.ConsistOf(args["--webhook-configuration-name"]))
	d := convert[appsv1.Deployment](t, only(objs, "Deployment")[0])
	g.Expect(d.Spec.Template.Spec.Volumes).To(gomega.ContainElement(gomega.HaveField("Secret.SecretName", args["--webhook-cert-secret"])))
	g.Expect(c.VolumeMounts).To(gomega.ContainElement(gomega.HaveField("MountPath", args["--webhook-cert-dir"])))
	g.Expect(rulesOf(t, objs, "Role", "reroll-system")).To(gomega.ContainElements("|secrets|list", "|secrets|watch"))
	for _, kind := range []string{"Role", "ClusterRole"} {
		// The state Role updates only the Job journal (TestHelmChart_DigestKeyRole).
		for _, o := range withoutDigestKeyRole(only(objs, kind)) {
			for _, r := range convert[rbacv1.Role](t, o).Rules {
				if slices.Contains(r.Verbs, "update") {
					g.Expect(r.ResourceNames).To(gomega.ConsistOf(gomega.BeElementOf(args["--webhook-cert-secret"], args["--webhook-configuration-name"])),
						"%s %s: update only on the Secret and the configuration", kind, o.GetName())
				}
			}
		}
	}

	type hook struct {
		Name, Path string
		Rules      []admissionregistrationv1.RuleWithOperations
		Selector   *metav1.LabelSelector
		Policy     admissionregistrationv1.FailurePolicyType
		Timeout    int32
	}
	hooks := func(u *unstructured.Unstructured) []hook {
		var out []hook
		for _, w := range convert[admissionregistrationv1.MutatingWebhookConfiguration](t, u).Webhooks {
			out = append(out, hook{w.Name, *w.ClientConfig.Service.Path, w.Rules, w.ObjectSelector, *w.FailurePolicy, *w.TimeoutSeconds})
		}
		return out
	}
	chart := only(renderChart(t, map[string]any{"webhook.enabled": true}), "MutatingWebhookConfiguration")[0]
	g.Expect(hooks(only(objs, "MutatingWebhookConfiguration")[0])).To(gomega.Equal(hooks(chart)))
	g.Expect(hooks(chart)).NotTo(gomega.ContainElement(gomega.HaveField("Name", "projection-author.reroll.dev")), "no Projections, no author check")

	// With the projections component after it, as config/default's comment
	// says: the admission check of a Projection's author is added, as the
	// chart adds it, and Reroll may create the SubjectAccessReviews it asks.
	g.Expect(os.WriteFile(base, append(k, "components:\n  - ../components/webhook\n  - ../components/projections\n"...), 0o644)).To(gomega.Succeed())
	out, err = run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	objs = decodeAll(t, out)
	g.Expect(container(t, objs).Args).To(gomega.ContainElements("--enable-webhook", "--enable-projections"))
	chart = only(renderChart(t, map[string]any{"webhook.enabled": true, "projections.enabled": true}), "MutatingWebhookConfiguration")[0]
	g.Expect(hooks(chart)).To(gomega.ContainElement(hook{Name: "projection-author.reroll.dev", Path: "/validate-projection-author",
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"reroll.dev"}, APIVersions: []string{"*"}, Resources: []string{"projections"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}},
		Policy: admissionregistrationv1.Fail, Timeout: 5}))
	g.Expect(hooks(only(objs, "MutatingWebhookConfiguration")[0])).To(gomega.Equal(hooks(chart)))
	g.Expect(boundClusterRules(t, objs, "reroll-system", "reroll-controller")).To(gomega.ContainElement("authorization.k8s.io|subjectaccessreviews|create"))
}

// boundClusterRules returns the rules of every ClusterRole of objs that a
// ClusterRoleBinding of objs grants to ServiceAccount namespace/name, as
// group|resource|verb triples.
func boundClusterRules(t *testing.T, objs []*unstructured.Unstructured, namespace, name string) []string {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range only(objs, "ClusterRole") {
		roles[o.GetName()] = convert[rbacv1.ClusterRole](t, o).Rules
	}
	var rules []rbacv1.PolicyRule
	for _, o := range only(objs, "ClusterRoleBinding") {
		b := convert[rbacv1.ClusterRoleBinding](t, o)
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == namespace && s.Name == name {
				rules = append(rules, roles[b.RoleRef.Name]...)
			}
		}
	}
	return expand(rules)
}

// generatedCSIRules reads config/components/csi/role.yaml, the permission
// of --enable-csi-integration, as group|resource|verb triples.
func generatedCSIRules(t *testing.T) []string {
	t.Helper()
	return componentRules(t, "config/components/csi/role.yaml")
}

// generatedPodEvictionRules reads config/components/pod-eviction/role.yaml,
// the permissions of --enable-pod-eviction, as group|resource|verb triples.
func generatedPodEvictionRules(t *testing.T) []string {
	t.Helper()
	return componentRules(t, "config/components/pod-eviction/role.yaml")
}

// componentRules reads the one ClusterRole of the file at path (relative to
// the repository) as group|resource|verb triples.
func componentRules(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	objs := decodeAll(t, string(data))
	newT(t).Expect(objs).To(gomega.HaveLen(1))
	return expand(convert[rbacv1.ClusterRole](t, objs[0]).Rules)
}
