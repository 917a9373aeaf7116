//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/cli"
)

// kubectlReroll runs the plugin as kubectl runs kubectl-reroll, with the
// plane's admin kubeconfig and no other flag than args.
func kubectlReroll(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(append([]string{"--kubeconfig", plane.Kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache")}, args...),
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

// TestPlugin_AnswersAsTheControllerInstalledFromReloaderValues installs
// Reroll's chart from a Reloader values file (namespace reloader,
// watchGlobally false, custom annotation names), runs the binary with the
// installed arguments as its ServiceAccount, and asks the plugin, with no
// flag: who-uses and plan answer as the controller then acts. Serial: the
// plugin looks for Reroll's Deployment in every namespace, and finds only
// this one.
func TestPlugin_AnswersAsTheControllerInstalledFromReloaderValues(t *testing.T) {
	g := newT(t)
	const ns = "reloader"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	g.Expect(k8s.Create(t.Context(), nsObj)).To(gomega.Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), nsObj)
		_ = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})), nil
		})
	})
	g.Eventually(func() error {
		return k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(gomega.Succeed())
	helmInstall(t, "reloader", ns, map[string]any{
		"reloader.watchGlobally":      false,
		"reloader.custom_annotations": map[string]string{"auto": "example.com/auto", "configmap": "example.com/configmaps"},
	})
	var dep appsv1.Deployment
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "reloader-reroll"}, &dep)).To(gomega.Succeed())
	ctr := dep.Spec.Template.Spec.Containers[0]
	env := map[string]string{"POD_NAMESPACE": ns, "POD_NAME": "reloader-reroll-e2e"}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}

	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"a": "1"}}
	g.Expect(k8s.Create(t.Context(), cfg)).To(gomega.Succeed())
	workload := func(name string, annotations map[string]string, envFrom bool) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		c := corev1.Container{Name: "app", Image: "registry.example/app:1"}
		if envFrom {
			c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
		}
		g.Expect(k8s.Create(t.Context(), d)).To(gomega.Succeed())
		return d
	}
	workloads := map[string]*appsv1.Deployment{
		// The custom auto annotation, reading cfg: rolls.
		"Deployment/custom-auto": workload("custom-auto", map[string]string{"example.com/auto": "true"}, true),
		// The custom list annotation, naming cfg without reading it: rolls.
		"Deployment/custom-list": workload("custom-list", map[string]string{"example.com/configmaps": "cfg"}, false),
		// Reloader's default auto name, which this installation does not
		// read: does not roll.
		"Deployment/default-auto": workload("default-auto", map[string]string{"reloader.stakater.com/auto": "true"}, true),
	}

	kubeconfig, _ := serviceAccountKubeconfig(t, ns, dep.Spec.Template.Spec.ServiceAccountName)
	p := startReroll(t, kubeconfig, ctr.Args, env)
	// First sight is over for both opted-in workloads (each references
	// cfg); it writes neither (the record waits for the first rollout).
	g.Eventually(func() float64 { return p.sample(t, "reroll_references", map[string]string{"source_kind": "ConfigMap"}) }).Should(gomega.Equal(2.0))
	for _, id := range []string{"Deployment/custom-auto", "Deployment/custom-list"} {
		g.Expect(deploymentIn(t, ns, workloads[id].Name).Annotations).NotTo(gomega.HaveKey(observedAnnotation), id)
	}

	stdout, stderr, code := kubectlReroll(t, "-n", ns, "who-uses", "configmap/cfg", "-o", "json")
	g.Expect(code).To(gomega.Equal(0), stderr)
	var who struct {
		Consumers []struct{ Workload, Rolls string }
		Notes     []string
	}
	g.Expect(json.Unmarshal([]byte(stdout), &who)).To(gomega.Succeed())
	rolls := map[string]string{}
	for _, c := range who.Consumers {
		rolls[c.Workload] = c.Rolls
	}
	g.Expect(rolls).To(gomega.Equal(map[string]string{"Deployment/custom-auto": "yes", "Deployment/custom-list": "yes", "Deployment/default-auto": "no"}))
	g.Expect(who.Notes).To(gomega.BeEmpty(), "the plugin found the controller and read its installation time")

	dir := t.TempDir()
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"2\"\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte(manifest), 0o600)).To(gomega.Succeed())
	stdout, stderr, code = kubectlReroll(t, "-n", ns, "plan", "-f", dir, "-o", "json")
	g.Expect(code).To(gomega.Equal(0), stderr)
	var plan struct {
		Workloads []struct {
			Workload string
			Rolls    bool
		}
	}
	g.Expect(json.Unmarshal([]byte(stdout), &plan)).To(gomega.Succeed())
	var predicted []string
	for _, w := range plan.Workloads {
		if w.Rolls {
			predicted = append(predicted, w.Workload)
		}
	}
	sort.Strings(predicted)
	g.Expect(predicted).To(gomega.Equal([]string{"Deployment/custom-auto", "Deployment/custom-list"}))

	generations := map[string]int64{}
	for id, d := range workloads {
		generations[id] = deploymentIn(t, ns, d.Name).Generation
	}
	mutate(t, &corev1.ConfigMap{}, ns, "cfg", func(o client.Object) { o.(*corev1.ConfigMap).Data["a"] = "2" })
	rolled := func() []string {
		var ids []string
		for id, d := range workloads {
			if deploymentIn(t, ns, d.Name).Generation != generations[id] {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	g.Eventually(rolled).Should(gomega.Equal(predicted))
	g.Consistently(rolled).Should(gomega.Equal(predicted))

	// After that rollout, the data changed after Reroll's installation and
	// every record is keyed: the next change is still predicted as the
	// controller rolls it.
	manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"3\"\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte(manifest), 0o600)).To(gomega.Succeed())
	stdout, stderr, code = kubectlReroll(t, "-n", ns, "plan", "-f", dir, "-o", "json")
	g.Expect(code).To(gomega.Equal(0), stderr)
	plan.Workloads = nil
	g.Expect(json.Unmarshal([]byte(stdout), &plan)).To(gomega.Succeed())
	predicted = nil
	for _, w := range plan.Workloads {
		if w.Rolls {
			predicted = append(predicted, w.Workload)
		}
	}
	sort.Strings(predicted)
	g.Expect(predicted).To(gomega.Equal([]string{"Deployment/custom-auto", "Deployment/custom-list"}), stdout)
}
