package projection

import (
	"testing"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
