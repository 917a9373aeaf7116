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
	b, err := os.ReadFile(filepath.Join(root, "config", "crd", "validators", "reroll.dev_validators.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(b, &crd)).To(gomega.Succeed())
	sch := runtime.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(sch)).To(gomega.Succeed())
	g.Expect(rerollv1alpha1.AddToScheme(sch)).To(gomega.Succeed())
	c, err := client.New(plane.Config, client.Options{Scheme: sch})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if err := c.Create(t.Context(), &crd); err != nil && !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	g.Eventually(func() error { return c.List(t.Context(), &rerollv1alpha1.ValidatorList{}) }).Should(gomega.Succeed())
	return c
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
