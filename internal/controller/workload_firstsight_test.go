package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_FirstSightDoesNotRoll(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	waitFirstReplicaSet(t, d)
	template := get(t, d).Spec.Template.DeepCopy()

	startReroll(t, ns, Options{})
	recorded(t, d)

	g.Consistently(func() corev1.PodTemplateSpec { return get(t, d).Spec.Template }).Should(gomega.Equal(*template))
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())
}

func TestWorkloadReconciler_ChangeWhileStoppedRollsExactlyOnceOnStart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)

	first := startReroll(t, ns, Options{})
	recorded(t, d)
	first.stop(t)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "changed while Reroll was down" })

	second := startReroll(t, ns, Options{})
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
	hash := get(t, d).Spec.Template.Annotations[trigger.ConfigHashAnnotation]
	g.Expect(hash).NotTo(gomega.BeEmpty())
	second.stop(t)

	// A third start finds nothing new: no second rollout.
	startReroll(t, ns, Options{})
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations[trigger.ConfigHashAnnotation]).To(gomega.Equal(hash))
	g.Eventually(func() int { return len(replicaSets(t, ns, "web")) }).Should(gomega.Equal(2))
	// Positive control: the third run is live and compares with the same
	// record: the next change rolls exactly once more, for that change only.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "changed once more" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(
		gomega.HaveSuffix("ConfigMap/cfg changed keys a"), gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
}
