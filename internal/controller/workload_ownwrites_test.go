package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

// TestWorkloadReconciler_AWriteRightAfterASettledRolloutIsReconciled rolls
// a Deployment (a settled plan: Reroll does not reconcile the watch event
// of its own write, apply.OwnWrites) and, as soon as that write shows, has
// someone else make the Deployment read one more ConfigMap. That write is
// reconciled: the record gains the ConfigMap, and a change of it rolls.
func TestWorkloadReconciler_AWriteRightAfterASettledRolloutIsReconciled(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: testKey(t, 37)}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(ns, "extra", map[string]string{"b": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)
	g.Expect(get(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.ContainSubstring("ConfigMap/extra"))

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() string {
		return get(t, d).Spec.Template.Annotations[trigger.ConfigHashAnnotation]
	}).WithPolling(10 * time.Millisecond).ShouldNot(gomega.BeEmpty())
	update(t, d, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = append(d.Spec.Template.Spec.Containers[0].EnvFrom, envFromSource("ConfigMap", "extra"))
	})

	g.Eventually(func() string { return get(t, d).Annotations[ObservedAnnotation] }).Should(gomega.ContainSubstring("ConfigMap/extra"))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
	update(t, configMap(ns, "extra", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("ConfigMap/extra changed keys b")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).WithTimeout(3 * time.Second).Should(gomega.HaveLen(2))
}
