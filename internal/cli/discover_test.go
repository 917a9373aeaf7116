package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

// reloaderManifests changes key a of ConfigMap cfg.
const reloaderManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "2"
`

// TestPlugin_FollowsTheControllerItFinds: Reroll installed from a Reloader
// values file, in namespace reloader, watching only it (watchGlobally:
// false) and with custom annotation names (custom_annotations). Run with
// no flag, the plugin finds that Deployment, reads its arguments, and
// answers who-uses and plan as the controller acts; with Reroll's default
// names it would answer the opposite for every workload here.
func TestPlugin_FollowsTheControllerItFinds(t *testing.T) {
	t.Parallel()
	g := newT(t)
	const ns = "reloader"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	g.Expect(k8s.Create(t.Context(), nsObj)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), nsObj) })

	// Reroll's Deployment as its chart renders it for that values file:
	// Reloader's arguments, spaced, as Reloader's chart writes them.
	rerollDeployment := deployment(ns, "reloader-reroll", nil, pod(container(func(c *corev1.Container) {
		c.Name = "reroll"
		c.Image = "harbor.corp/proxy/reroll:v0.1.0"
		c.Args = []string{"--reload-strategy=env-vars", "--auto-annotation", "example.com/auto", "--configmap-annotation", "example.com/configmaps"}
		c.Env = []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", Value: ns}, {Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}
	})))
	rerollDeployment.Labels = map[string]string{"app.kubernetes.io/name": "reroll", "app.kubernetes.io/instance": "reloader"}
	create(t, rerollDeployment, configMap(ns, "cfg", nil, map[string]string{"a": "1"}))

	workloads := map[string]client.Object{
		// The custom auto annotation, reading cfg: rolls.
		"Deployment/custom-auto": deployment(ns, "custom-auto", map[string]string{"example.com/auto": "true"}, pod(container(envFromConfigMap("cfg")))),
		// The custom list annotation, naming cfg: rolls.
		"Deployment/custom-list": deployment(ns, "custom-list", map[string]string{"example.com/configmaps": "cfg"}, pod(container())),
		// Reloader's default auto name, which this Reroll does not read.
		"Deployment/default-auto": deployment(ns, "default-auto", reloaderAutoOn, pod(container(envFromConfigMap("cfg")))),
	}
	for _, w := range workloads {
		create(t, w)
	}
	names := annotation.DefaultNames()
	names.Auto, names.ConfigMapReload = "example.com/auto", "example.com/configmaps"
	startReroll(t, ns, controller.Options{PlanOptions: plan.Options{Strategy: trigger.EnvVars, Annotations: annotation.Config{Names: names}}}, nil)
	// Positive control: the controller acts on the custom names.
	recorded(t, workloads["Deployment/custom-auto"], workloads["Deployment/custom-list"])

	out, err := kubectlRerollDiscovering(t, "-n", ns, "who-uses", "configmap/cfg", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r whoUsesReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	rolls := map[string]string{}
	for _, c := range r.Consumers {
		rolls[c.Workload] = c.Rolls
	}
	g.Expect(rolls).To(gomega.Equal(map[string]string{"Deployment/custom-auto": "yes", "Deployment/custom-list": "yes", "Deployment/default-auto": "no"}))
	for _, n := range r.Notes {
		g.Expect(n).NotTo(gomega.ContainSubstring("could not find Reroll's controller"))
	}

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(reloaderManifests), 0o600)).To(gomega.Succeed())
	out, err = kubectlRerollDiscovering(t, "-n", ns, "plan", "-f", dir, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var p planReport
	g.Expect(json.Unmarshal([]byte(out), &p)).To(gomega.Succeed())
	var predicted []string
	for _, w := range p.Workloads {
		if w.Rolls {
			predicted = append(predicted, w.Workload)
		}
	}
	sort.Strings(predicted)
	g.Expect(predicted).To(gomega.Equal([]string{"Deployment/custom-auto", "Deployment/custom-list"}))

	// As the controller acts: exactly the predicted workloads roll.
	before := map[string]map[string]string{}
	for id, w := range workloads {
		before[id] = podTemplateAnnotations(t, w)
	}
	envBefore := map[string][]corev1.EnvVar{}
	for id, w := range workloads {
		envBefore[id] = podEnv(t, w)
	}
	apply(t, ns, reloaderManifests)
	rolled := func() []string {
		var ids []string
		for id, w := range workloads {
			if !maps.Equal(before[id], podTemplateAnnotations(t, w)) || !equalEnv(envBefore[id], podEnv(t, w)) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	g.Eventually(rolled).Should(gomega.Equal(predicted))
	g.Consistently(rolled).Should(gomega.Equal(predicted))

	// The same plugin told to ignore the controller answers as a default
	// Reroll would, which is wrong here: what the test above tells apart.
	out, err = kubectlReroll(t, "-n", ns, "who-uses", "configmap/cfg", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	r = whoUsesReport{}
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	rolls = map[string]string{}
	for _, c := range r.Consumers {
		rolls[c.Workload] = c.Rolls
	}
	// custom-list does not even count as a consumer: only its custom list
	// names cfg.
	g.Expect(rolls).To(gomega.Equal(map[string]string{"Deployment/custom-auto": "no", "Deployment/default-auto": "yes"}))

	// status looks in the controller's namespace, not reroll-system.
	out, _ = kubectlRerollDiscovering(t, "-n", ns, "status", "-o", "json")
	var st statusReport
	g.Expect(json.Unmarshal([]byte(out), &st)).To(gomega.Succeed(), out)
	g.Expect(st.RerollNamespace).To(gomega.Equal(ns))
	g.Expect(st.Deployments).To(gomega.HaveLen(1))

	// version: the plugin and the controller it found; the test binary has
	// no release version, so it cannot tell whether they decide alike.
	stdout, stderr, code := runPluginDiscovering(t, "version")
	g.Expect(code).To(gomega.Equal(0), stderr)
	g.Expect(stdout).To(gomega.ContainSubstring("Server: v0.1.0 (Deployment reloader/reloader-reroll, image harbor.corp/proxy/reroll:v0.1.0)"))
	g.Expect(stderr).To(gomega.ContainSubstring("Warning: this plugin has no release version"))
}

// TestCheck_FindsAMissingPermissionOfTheController: check finds the
// controller by label, sees it ready, and fails on RBAC until its
// ServiceAccount may do what Reroll needs where it watches.
func TestCheck_FindsAMissingPermissionOfTheController(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"}}
	d := deployment(ns, "reroll", nil, pod(container(func(c *corev1.Container) {
		c.Name = "manager"
		c.Image = "ghcr.io/reroll/reroll:v0.1.0"
		c.Args = []string{"--namespaces=" + ns}
	})))
	d.Spec.Template.Spec.ServiceAccountName = "reroll"
	// Its own label: TestPlugin_FollowsTheControllerItFinds, in parallel,
	// finds the only Deployment labelled as Reroll's in any namespace.
	d.Labels = map[string]string{"app.kubernetes.io/name": "reroll-check"}
	create(t, sa, d)
	results := func() map[string]string {
		stdout, stderr, _ := runPluginDiscovering(t, "check", "--reroll-namespace", ns, "--reroll-selector", "app.kubernetes.io/name=reroll-check", "-o", "json")
		var r checkReport
		g.Expect(json.Unmarshal([]byte(stdout), &r)).To(gomega.Succeed(), stderr)
		out := map[string]string{}
		for _, c := range r.Checks {
			out[c.Check] = c.Result
		}
		return out
	}
	// kwok makes the pod ready: the controller check turns ok first.
	g.Eventually(results).Should(gomega.HaveKeyWithValue("controller", "ok"))
	g.Expect(results()).To(gomega.HaveKeyWithValue("rbac", "failed"))
	g.Expect(results()).To(gomega.HaveKeyWithValue("webhook", "ok"))
	_, stderr, code := runPluginDiscovering(t, "check", "--reroll-namespace", ns, "--reroll-selector", "app.kubernetes.io/name=reroll-check")
	g.Expect(code).To(gomega.Equal(1))
	g.Expect(stderr).To(gomega.ContainSubstring(ErrCheckFailed.Error()))

	create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reroll"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "reroll"}}},
	)
	g.Eventually(results).Should(gomega.HaveKeyWithValue("rbac", "ok"))
}

// runPluginDiscovering runs the plugin as Run does, finding Reroll's
// Deployment.
func runPluginDiscovering(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(append([]string{"--kubeconfig", plane.Kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache")}, args...),
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

// podEnv returns the env of a Deployment's first container, read afresh:
// where the env-vars strategy writes its trigger.
func podEnv(t *testing.T, obj client.Object) []corev1.EnvVar {
	t.Helper()
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
	return obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env
}

func equalEnv(a, b []corev1.EnvVar) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}
