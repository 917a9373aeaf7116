package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestWorkloadReconciler_WarnsOnMalformedAnnotationAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "good", map[string]string{"a": "1"}))
	d := deployment(ns, "web", map[string]string{
		"reroll.dev/auto":       "sometimes",
		"reroll.dev/configmaps": "good,Not_A_Name",
	}, podSpec())
	create(t, d)

	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonInvalidAnnotation) }).Should(gomega.ContainElements(
		gomega.ContainSubstring(`reroll.dev/auto: value "sometimes" is not a boolean`),
		gomega.ContainSubstring(`"Not_A_Name" is not a valid object name`),
	))
	recorded(t, d)
	update(t, configMap(ns, "good", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/good changed keys a")))
}

func TestWorkloadReconciler_ReadsOptInFromPodTemplate(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", nil, podSpec(envFrom("cfg")))
	d.Spec.Template.Annotations = map[string]string{"reloader.stakater.com/auto": "true"}
	create(t, d)
	recorded(t, d)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}
