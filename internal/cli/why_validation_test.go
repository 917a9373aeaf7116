package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/test/controlplane"
)

func init() {
	// Reroll's manager lists Validators through its scheme.
	utilruntime.Must(rerollv1alpha1.AddToScheme(scheme))
}

// installValidatorCRD creates the Validator CRD of config/crd and waits
// until Validators are served; it returns a client that writes them.
func installValidatorCRD(t *testing.T) client.Client {
	t.Helper()
	g := newT(t)
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	sch := runtime.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(sch)).To(gomega.Succeed())
	g.Expect(rerollv1alpha1.AddToScheme(sch)).To(gomega.Succeed())
	c, err := client.New(plane.Config, client.Options{Scheme: sch})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, file := range []string{"reroll.dev_validators.yaml", "reroll.dev_clustervalidators.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "config", "crd", "validators", file))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(yaml.Unmarshal(b, &crd)).To(gomega.Succeed())
		if err := c.Create(t.Context(), &crd); err != nil && !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
	}
	g.Eventually(func() error { return c.List(t.Context(), &rerollv1alpha1.ValidatorList{}) }).Should(gomega.Succeed())
	g.Eventually(func() error { return c.List(t.Context(), &rerollv1alpha1.ClusterValidatorList{}) }).Should(gomega.Succeed())
	return c
}

func TestValidate_ClusterRulesApplyTheClusterValidatorsOfTheObjectsNamespace(t *testing.T) {
	t.Parallel()
	g := newT(t)
	c := installValidatorCRD(t)
	ns := newNamespace(t)
	other := newNamespace(t)
	// Selects ns alone, by the label the API server gives every namespace.
	cv := &rerollv1alpha1.ClusterValidator{
		ObjectMeta: metav1.ObjectMeta{Name: "json-" + ns},
		Spec: rerollv1alpha1.ClusterValidatorSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ValidatorSpec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{"app-config"},
				Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON}}},
		},
	}
	g.Expect(c.Create(t.Context(), cv)).To(gomega.Succeed())
	t.Cleanup(func() { _ = c.Delete(t.Context(), cv) })
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(appConfigYAML(`{"replicas": 3,}`)), 0o600)).To(gomega.Succeed())

	// Positive first: in the namespace it selects, the cluster's
	// ClusterValidator fails the object.
	out, err := kubectlReroll(t, "-n", ns, "validate", "-f", dir, "--cluster-rules")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("1 of 1 objects fail")), out)
	g.Expect(lines(out)).To(gomega.ContainElement(gomega.HavePrefix(ns + "/ConfigMap/app-config ClusterValidator/json-" + ns + " config-json config.json is not valid JSON")))

	// Without --cluster-rules it is not read; in another namespace it does
	// not select, it does not apply.
	out, err = kubectlReroll(t, "-n", ns, "validate", "-f", dir)
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.ContainSubstring("0 of 1 objects fail, with 0 Validators"))
	out, err = kubectlReroll(t, "-n", other, "validate", "-f", dir, "--cluster-rules")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.ContainSubstring("0 of 1 objects fail"))
	g.Expect(out).NotTo(gomega.ContainSubstring("Note:"))
}

func TestWhy_ShowsAHoldForContentThatFailsAValidator(t *testing.T) {
	t.Parallel()
	g := newT(t)
	c := installValidatorCRD(t)
	ns := newNamespace(t)
	g.Expect(c.Create(t.Context(), &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{"cfg"},
			Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON}}},
	})).To(gomega.Succeed())
	create(t, configMap(ns, "cfg", nil, map[string]string{"config.json": `{"a": 1}`}))
	d := deployment(ns, "web", autoOn, pod(container(envFromConfigMap("cfg"))))
	create(t, d)
	startReroll(t, ns, controller.Options{Validate: true}, nil)
	recorded(t, d)

	why := func(g gomega.Gomega) whyReport {
		out, err := kubectlReroll(t, "-n", ns, "why", "deploy/web", "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r whyReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	edit := func(v string) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cfg"}, cm)).To(gomega.Succeed())
		cm.Data["config.json"] = v
		g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())
	}
	// Positive first: valid content rolls, and nothing blocks.
	edit(`{"a": 2}`)
	g.Eventually(func(g gomega.Gomega) {
		r := why(g)
		g.Expect(r.Rollouts).To(gomega.HaveLen(1))
		g.Expect(r.Blocks).To(gomega.BeEmpty())
	}).Should(gomega.Succeed())

	edit(`{"a": 3,}`)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(why(g).Blocks).To(gomega.ContainElement(gomega.And(
			gomega.HavePrefix("held (pending invalid): the new content fails validation: ConfigMap/cfg: "),
			gomega.ContainSubstring(`app-config/config-json: key "config.json" is not valid JSON`))))
	}).Should(gomega.Succeed())
	g.Expect(why(g).Rollouts).To(gomega.HaveLen(1))
	table, err := kubectlReroll(t, "-n", ns, "why", "deployment/web")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("Blocked:   held (pending invalid)"))
}
