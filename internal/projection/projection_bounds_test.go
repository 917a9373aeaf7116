package projection

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// The security review: a Projection could target a cluster-scoped kind,
// although the docs say "same namespace". Without
// --projection-allow-cluster-scoped-targets it stops, before any read of the
// target, with Ready=False, reason InvalidSpec.
func TestProjection_ClusterScopedTargetIsRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// allow is AllowClusterScopedTargets.
		allow bool
		// want is the Ready condition's reason; message part of its note.
		want, message string
	}{
		// Positive control: allowed, the Projection reads the Namespace as
		// its ServiceAccount, which may not.
		"allowed by the cluster setting": {allow: true, want: ReasonForbidden, message: "may not get namespaces"},
		"refused by default":             {want: ReasonInvalidSpec, message: "Namespace is cluster-scoped"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns, p := harbor(t)
			p.Spec.Target = rerollv1alpha1.Target{APIVersion: "v1", Kind: "Namespace", Name: ns}
			startProjections(t, ns, Options{AllowClusterScopedTargets: tc.allow})
			create(t, p)
			g.Eventually(func() metav1.Condition { return condition(t, ns, "harbor-s3", ConditionReady) }).Should(gomega.And(
				gomega.HaveField("Status", metav1.ConditionFalse),
				gomega.HaveField("Reason", tc.want),
				gomega.HaveField("Message", gomega.ContainSubstring(tc.message)),
			))
		})
	}
}

func TestProjection_ClientCacheIsBounded(t *testing.T) {
	g := newT(t)
	r := &Reconciler{Config: plane.Config, Scheme: scheme}
	first, err := r.clientFor("ns", "sa-0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	again, err := r.clientFor("ns", "sa-0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// Positive control: a ServiceAccount in use keeps its client.
	g.Expect(again).To(gomega.BeIdenticalTo(first))
	for i := range 2 * maxClients {
		_, err := r.clientFor("ns", "sa-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	g.Expect(r.clients.Len()).To(gomega.Equal(maxClients))
}

// The third security review (H1): 1,024 ${a} in one template over a
// ConfigMap value of ~1 MiB allocated ~1 GiB in one reconcile (OOM, then a
// crash loop, since the Projection is reconciled again at start). The
// rendered size is now bounded before anything is rendered: Ready=False,
// reason TooLarge, a Warning Event, and the target keeps its last values.
func TestProjection_AmplifyingTemplateIsRefused(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	serviceAccount(t, ns, "projector", readSources, writeWidgets)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "value"}, Data: map[string]string{"a": "x"}}
	create(t, cm, widget(ns, "w", map[string]any{}))
	create(t, projection(ns, "amplify", "projector", "w",
		[]rerollv1alpha1.Source{configMapKey("a", "value", "a")},
		rerollv1alpha1.Field{Path: "spec.out", Template: ptr.To(strings.Repeat("${a}", 1024))}))
	startProjections(t, ns, Options{})

	// Positive control: over a one-byte value, the 1,024 copies are written.
	g.Eventually(func() string { return field(t, getWidget(t, ns, "w"), "spec.out") }).Should(gomega.Equal(strings.Repeat("x", 1024)))

	// 900 KiB, under the ConfigMap limit: 900 MiB rendered.
	cm.Data["a"] = strings.Repeat("y", 900<<10)
	g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())
	g.Eventually(func() metav1.Condition { return condition(t, ns, "amplify", ConditionReady) }).Should(gomega.And(
		gomega.HaveField("Status", metav1.ConditionFalse),
		gomega.HaveField("Reason", ReasonTooLarge),
		gomega.HaveField("Message", gomega.ContainSubstring("field spec.out: its value would be 943718400 bytes")),
	))
	g.Eventually(func() []string { return events(t, ns, "Projection", "amplify", ReasonTooLarge) }).Should(
		gomega.ContainElement(gomega.ContainSubstring("over the limit")))
	g.Expect(field(t, getWidget(t, ns, "w"), "spec.out")).To(gomega.Equal(strings.Repeat("x", 1024)))
}
