package controller

import (
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestWorkloadReconciler_ConfigMapAndSecretEditedTogether(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"mode": "a"}), secret(ns, "creds", map[string]string{"key": "a"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["mode"] = "b" })
	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["key"] = []byte("b") })

	// Whether Reroll saw the two edits in one reconcile or two, the workload
	// ends up reflecting both.
	// The digest of "b": `printf b | sha256sum`, its first 16 characters.
	want := map[string]map[string]string{
		"ConfigMap/cfg": {"mode": "3e23e8160039594a"},
		"Secret/creds":  {"key": "3e23e8160039594a"},
	}
	g.Eventually(func(g gomega.Gomega) {
		var got map[string]map[string]string
		g.Expect(json.Unmarshal([]byte(get(t, d).Annotations[ObservedAnnotation]), &got)).To(gomega.Succeed())
		g.Expect(got).To(gomega.Equal(want))
	}).Should(gomega.Succeed())
	// Events are posted asynchronously, after the patch.
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.And(
		gomega.ContainElement(gomega.ContainSubstring("ConfigMap/cfg changed keys mode")),
		gomega.ContainElement(gomega.ContainSubstring("Secret/creds changed keys key")),
	))
}
