package controller

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// refTarget is a Deployment of no replicas whose template an Argo Rollout
// runs through spec.workloadRef; its pods read ConfigMap cfg.
func refTarget(ns string) *appsv1.Deployment {
	d := deployment(ns, "ref-target", nil, podSpec(envFrom("cfg")))
	d.Spec.Replicas = ptr.To[int32](0)
	return d
}

// byWorkloadRef returns the spec of an Argo Rollout that runs refTarget's
// template.
func byWorkloadRef() map[string]any {
	return map[string]any{
		"replicas":    int64(1),
		"selector":    map[string]any{"matchLabels": map[string]any{"app": "ref-target"}},
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "ref-target"},
	}
}

func TestWorkloadReconciler_ArgoRolloutFollowsItsWorkloadRefTemplate(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installCRD(t, argoRolloutCRD(t))
	ns := newNamespace(t)
	argo := workload.ArgoRollout()
	startReroll(t, ns, Options{Kinds: []workload.Kind{argo}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(ns, "extra", map[string]string{"x": "1"}))
	target := refTarget(ns)
	byRef := customObject(t, argo, ns, "by-ref", autoOn, byWorkloadRef())
	create(t, target, byRef)
	recorded(t, byRef)

	// The Deployment's template starts reading ConfigMap extra: the
	// Rollout's record follows, without a rollout.
	update(t, target, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = append(d.Spec.Template.Spec.Containers[0].EnvFrom, corev1.EnvFromSource{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}},
		})
	})
	g.Eventually(func() string { return get(t, byRef).GetAnnotations()[ObservedAnnotation] }).Should(gomega.ContainSubstring(`"ConfigMap/extra"`))
	g.Expect(rolledEvents(t, ns, "by-ref")).To(gomega.BeEmpty(), "a template change is recorded, not rolled by Reroll")

	// So the next change to extra is not mistaken for a new reference: it rolls.
	update(t, configMap(ns, "extra", nil), func(cm *corev1.ConfigMap) { cm.Data["x"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "by-ref") }).Should(gomega.ConsistOf(gomega.ContainSubstring("ConfigMap/extra changed keys x")))
	g.Expect(get(t, target).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
}

func TestWorkloadReconciler_WaveDialectThroughArgoWorkloadRef(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installCRD(t, argoRolloutCRD(t))
	ns := newNamespace(t)
	argo := workload.ArgoRollout()
	startReroll(t, ns, Options{Kinds: []workload.Kind{argo}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	target := refTarget(ns)
	byRef := customObject(t, argo, ns, "by-ref", map[string]string{"wave.pusher.com/update-on-config-change": "true"}, byWorkloadRef())
	create(t, target, byRef)
	recorded(t, byRef)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	want := digest.WaveHash(map[string]map[string][]byte{"cfg": {"a": []byte("2")}}, nil)
	// Wave's hash is computed before it is written into the Deployment's
	// template: never an empty value.
	g.Eventually(func() map[string]string { return get(t, target).Spec.Template.Annotations }).Should(
		gomega.HaveKeyWithValue(trigger.WaveHashAnnotation, want))
	g.Eventually(func() []string { return rolledEvents(t, ns, "by-ref") }).Should(gomega.ConsistOf(gomega.ContainSubstring("the Rollout's workloadRef")))
}
