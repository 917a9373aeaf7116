package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/pin"
)

// TestWhy_SeesThroughPinnedCopies: a versioned workload's template names
// copies; who-uses and why see through them to the source, and why says
// which copy it is pinned to and where the source is now: at that version,
// then, after an undo to the older copy, moved on.
func TestWhy_SeesThroughPinnedCopies(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	cm := configMap(ns, "cfg", nil, map[string]string{"a": "1"})
	create(t, cm)
	d := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true", pin.VersionedAnnotation: "true"}, pod(container(envFromConfigMap("cfg"))))
	create(t, d)
	startReroll(t, ns, controller.Options{}, nil)
	names := func() []string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(d), d)).To(gomega.Succeed())
		cms, _ := pin.Referenced(&d.Spec.Template.Spec)
		return cms
	}
	g.Eventually(names).Should(gomega.ConsistOf(gomega.HavePrefix("cfg-")))
	first := names()[0]
	var old corev1.PodTemplateSpec
	d.Spec.Template.DeepCopyInto(&old)

	why := func() whyReport {
		out, err := kubectlReroll(t, "-n", ns, "why", "deploy/web", "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r whyReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	r := why()
	g.Expect(r.Pins).To(gomega.HaveLen(1))
	g.Expect(r.Pins[0].Source).To(gomega.Equal("ConfigMap/cfg"))
	g.Expect(r.Pins[0].Copy).To(gomega.Equal(first))
	g.Expect(r.Pins[0].SourceNow).To(gomega.Equal("at this version"))
	g.Expect(r.Pins[0].Since).NotTo(gomega.BeEmpty())
	// The record and the objects are the source's, not the copy's.
	g.Expect(r.Objects).To(gomega.ConsistOf(gomega.HaveField("Object", "ConfigMap/cfg")))

	out, err := kubectlReroll(t, "-n", ns, "who-uses", "configmap/cfg", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).To(gomega.ContainSubstring(`"Deployment/web"`))

	// The source changes, Reroll rolls to a new copy; then an undo.
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm)).To(gomega.Succeed())
	cm.Data["a"] = "2"
	g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())
	g.Eventually(names).ShouldNot(gomega.Equal([]string{first}))
	g.Eventually(func() []string { return []string{why().Pins[0].Copy, why().Pins[0].SourceNow} }).Should(gomega.Equal([]string{names()[0], "at this version"}))
	g.Eventually(func() error {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		d.Spec.Template = *old.DeepCopy()
		return k8s.Update(t.Context(), d)
	}).Should(gomega.Succeed())
	r = why()
	g.Expect(r.Pins).To(gomega.HaveLen(1))
	g.Expect(r.Pins[0].Copy).To(gomega.Equal(first))
	g.Expect(r.Pins[0].SourceNow).To(gomega.Equal("moved on"))
	table, err := kubectlReroll(t, "-n", ns, "why", "deployment/web")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("Pinned:    ConfigMap/cfg to copy " + first))
	g.Expect(strings.Contains(table, "; source now: moved on")).To(gomega.BeTrue(), table)
}
