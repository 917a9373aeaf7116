package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/trigger"
)

// podReloaderHash recomputes SAP pod-reloader's hash from its definition,
// independently of package digest: "<kind>/<ns>/<name>/<uid>.<rv>\n" per
// listed object, ConfigMaps first, in annotation order; SHA-256, hex.
func podReloaderHash(t *testing.T, ns string, configMaps, secrets []string) string {
	t.Helper()
	s := ""
	for _, l := range []struct {
		kind  string
		names []string
		obj   func() client.Object
	}{
		{"configmap", configMaps, func() client.Object { return &corev1.ConfigMap{} }},
		{"secret", secrets, func() client.Object { return &corev1.Secret{} }},
	} {
		for _, name := range l.names {
			s += l.kind + "/" + ns + "/" + name + "/"
			o := l.obj()
			if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err == nil {
				s += string(o.GetUID()) + "." + o.GetResourceVersion()
			}
			s += "\n"
		}
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestWorkloadReconciler_PodReloaderDialect(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "b", map[string]string{"k": "1"}), configMap(ns, "a", map[string]string{"k": "1"}), secret(ns, "s", map[string]string{"k": "1"}))
	lists := map[string]string{
		"pod-reloader.cs.sap.com/configmaps": "b,a,missing",
		"pod-reloader.cs.sap.com/secrets":    "s",
	}
	cms, secrets := []string{"b", "a", "missing"}, []string{"s"}
	// A Deployment pod-reloader already rolled: its hash is current.
	switched := deployment(ns, "switched", lists, podSpec())
	switched.Spec.Template.Annotations = map[string]string{trigger.PodReloaderHashAnnotation: podReloaderHash(t, ns, cms, secrets)}
	fresh := deployment(ns, "fresh", lists, podSpec())
	create(t, switched, fresh)
	waitRolledOut(t, switched)

	startReroll(t, ns, Options{})
	recorded(t, switched)
	recorded(t, fresh)
	g.Consistently(func() []string { return rolledEvents(t, ns, "switched") }).Should(gomega.BeEmpty())
	g.Expect(replicaSets(t, ns, "switched")).To(gomega.HaveLen(1), "switching from pod-reloader rolls nothing")
	g.Expect(get(t, fresh).Spec.Template.Annotations).To(gomega.BeEmpty(), "first sight rolls nothing")

	// In this dialect any write counts, a label-only one included.
	update(t, configMap(ns, "a", nil), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"touched": "yes"} })
	want := podReloaderHash(t, ns, cms, secrets)
	for _, d := range []string{"switched", "fresh"} {
		g.Eventually(func() map[string]string { return get(t, deployment(ns, d, nil, podSpec())).Spec.Template.Annotations }).Should(
			gomega.HaveKeyWithValue(trigger.PodReloaderHashAnnotation, want))
		g.Eventually(func() []string { return rolledEvents(t, ns, d) }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/a was written")))
	}
}
