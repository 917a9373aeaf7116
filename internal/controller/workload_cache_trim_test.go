package controller

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

// The third security review (M7): the workload cache kept whole pod
// templates, so ~200 Deployments with replicas: 0 and ~1 MB of env values
// each exceeded the chart's 256 Mi at every start. The cache now keeps a
// digest of each long env value; the writes, strategic merge patches
// between two cached copies, never carry the digest back: after a rollout
// by either strategy the API server's Deployment still holds the value.
func TestWorkloadReconciler_CacheKeepsNoLongEnvValues(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("v", 256<<10)
	for _, strategy := range []trigger.Strategy{trigger.Annotations, trigger.EnvVars} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
			d := deployment(ns, "web", reloaderAutoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "BIG", Value: big}, {Name: "SMALL", Value: "s"}}
			}))
			create(t, d)
			rr := startReroll(t, ns, Options{PlanOptions: plan.Options{Strategy: strategy}})
			recorded(t, d)

			cached := &appsv1.Deployment{}
			g.Expect(rr.cache.Get(t.Context(), client.ObjectKeyFromObject(d), cached)).To(gomega.Succeed())
			env := cached.Spec.Template.Spec.Containers[0].Env
			g.Expect(env[0].Value).To(gomega.HavePrefix(envtrim.Prefix), "the cache holds a digest of the long value")
			g.Expect(len(env[0].Value)).To(gomega.BeNumerically("<", 128))
			g.Expect(env[1].Value).To(gomega.Equal("s"), "a short value is kept")

			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
			g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
			cur := get(t, d)
			var names []string
			for _, e := range cur.Spec.Template.Spec.Containers[0].Env {
				names = append(names, e.Name)
				if e.Name == "BIG" {
					g.Expect(e.Value == big).To(gomega.BeTrue(), "the API server's Deployment still holds the long value (%d bytes)", len(e.Value))
				}
			}
			g.Expect(names).To(gomega.ContainElements("BIG", "SMALL"))
			if strategy == trigger.EnvVars {
				g.Expect(names).To(gomega.ContainElement(gomega.HavePrefix("STAKATER_")), "the trigger was written")
			} else {
				g.Expect(cur.Spec.Template.Annotations).NotTo(gomega.BeEmpty(), "the trigger was written")
			}
		})
	}
}
