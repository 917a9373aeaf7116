package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/test/controlplane"
)

// TestWhoUses_ListsProjectionsThatReadTheObject: a Projection whose source
// reads a Secret's key is a consumer of that Secret, with the target it
// writes; one that reads another Secret is not.
func TestWhoUses_ListsProjectionsThatReadTheObject(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installProjectionCRD(t)
	ns := newNamespace(t)
	create(t, secret(ns, "s3", map[string]string{"accessKey": "a", "secretKey": "b"}), secret(ns, "other", map[string]string{"x": "1"}))
	sch := runtime.NewScheme()
	g.Expect(rerollv1alpha1.AddToScheme(sch)).To(gomega.Succeed())
	c, err := client.New(plane.Config, client.Options{Scheme: sch})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	projection := func(name, secretName string) *rerollv1alpha1.Projection {
		return &rerollv1alpha1.Projection{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: rerollv1alpha1.ProjectionSpec{
				Sources: []rerollv1alpha1.Source{{Name: "key", SecretKeyRef: &rerollv1alpha1.KeySelector{Name: secretName, Key: "accessKey"}}},
				Target:  rerollv1alpha1.Target{APIVersion: "example.reroll.dev/v1", Kind: "HarborCluster", Name: "harbor"},
				Fields:  []rerollv1alpha1.Field{{Path: "spec.storage.s3.accessKey", Source: "key"}},
			},
		}
	}
	g.Expect(c.Create(t.Context(), projection("harbor-s3", "s3"))).To(gomega.Succeed())
	g.Expect(c.Create(t.Context(), projection("unrelated", "other"))).To(gomega.Succeed())

	out, err := kubectlReroll(t, "-n", ns, "who-uses", "secret/s3", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r whoUsesReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	g.Expect(r.Consumers).To(gomega.HaveLen(1))
	p := r.Consumers[0]
	g.Expect(p.Workload).To(gomega.Equal("Projection/harbor-s3"))
	g.Expect(p.Rule).To(gomega.Equal("writes HarborCluster/harbor"))
	g.Expect(p.References).To(gomega.Equal([]referenceUse{{Via: "projection source key", Keys: []string{"accessKey"}}}))
	g.Expect(p.Keys).To(gomega.Equal([]keyDecision{{Key: "accessKey", Consumed: true, Exists: true, Rolls: "yes"}}))

	table, err := kubectlReroll(t, "-n", ns, "who-uses", "secret/s3")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.MatchRegexp(`Projection/harbor-s3 +projection +projection source key`))
	g.Expect(table).NotTo(gomega.ContainSubstring("unrelated"))
}

// installProjectionCRD creates the Projection CRD of config/crd, once for
// the plane, and waits until it is served.
func installProjectionCRD(t *testing.T) {
	t.Helper()
	g := newT(t)
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	b, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "reroll.dev_projections.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(b, &crd)).To(gomega.Succeed())
	sch := runtime.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(sch)).To(gomega.Succeed())
	c, err := client.New(plane.Config, client.Options{Scheme: sch})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if err := c.Create(t.Context(), &crd); err != nil && !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	g.Eventually(func(g gomega.Gomega) {
		var got apiextensionsv1.CustomResourceDefinition
		g.Expect(c.Get(t.Context(), client.ObjectKey{Name: crd.Name}, &got)).To(gomega.Succeed())
		established := false
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		g.Expect(established).To(gomega.BeTrue())
	}).Should(gomega.Succeed())
}
