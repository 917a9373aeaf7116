package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/store"
)

// scopeFixture makes a ConfigMap "cfg" and an opted-in Deployment "web"
// that reads it in namespace ns.
func scopeFixture(t *testing.T, ns string) {
	t.Helper()
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), deployment(ns, "web", autoOn, podSpec(envFrom("cfg"))))
}

func changeData(t *testing.T, ns string) {
	t.Helper()
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] += "+" })
}

func TestWorkloadReconciler_IgnoredNamespaceIsNeitherRolledNorCached(t *testing.T) {
	t.Parallel()
	g := newT(t)
	in, out := newNamespace(t), newNamespace(t)
	scopeFixture(t, in)
	scopeFixture(t, out)
	r := startReroll(t, in, Options{Scope: scope.Scope{Namespaces: []string{in, out}, IgnoredNamespaces: []string{out}}})
	recorded(t, deployment(in, "web", nil, podSpec()))

	changeData(t, in)
	changeData(t, out)
	g.Eventually(func() []string { return rolledEvents(t, in, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, out, "web") }).Should(gomega.BeEmpty())
	g.Expect(get(t, deployment(out, "web", nil, podSpec())).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	// The API server filtered the ignored namespace out of the watch: Reroll
	// holds none of its objects.
	g.Expect(r.cachedConfigMap(t, in, "cfg")).To(gomega.BeTrue())
	g.Expect(r.cachedConfigMap(t, out, "cfg")).To(gomega.BeFalse())
}

func TestWorkloadReconciler_NamespaceOutsideNamespacesIsNotCached(t *testing.T) {
	t.Parallel()
	g := newT(t)
	in, out := newNamespace(t), newNamespace(t)
	scopeFixture(t, in)
	scopeFixture(t, out)
	r := startReroll(t, in, Options{Scope: scope.Scope{Namespaces: []string{in}}})
	recorded(t, deployment(in, "web", nil, podSpec()))
	changeData(t, out)
	changeData(t, in)
	// Positive control: the same change inside the scope rolls; the one
	// outside, made before it, does not.
	g.Eventually(func() []string { return rolledEvents(t, in, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, out, "web") }).Should(gomega.BeEmpty())
	g.Expect(get(t, deployment(out, "web", nil, podSpec())).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	_, err := r.cachedConfigMap(t, out, "cfg")
	g.Expect(err).To(gomega.MatchError(store.ErrNotWatched))
}

func TestWorkloadReconciler_NamespaceSelector(t *testing.T) {
	t.Parallel()
	g := newT(t)
	selected, other := newNamespace(t), newNamespace(t)
	for _, ns := range []string{selected, other} {
		scopeFixture(t, ns)
	}
	labelNamespace(t, selected, "reroll-test-team", "a")
	sel, err := labels.Parse("reroll-test-team=a")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	startReroll(t, selected, Options{Scope: scope.Scope{Namespaces: []string{selected, other}, NamespaceSelector: sel}})
	recorded(t, deployment(selected, "web", nil, podSpec()))

	changeData(t, selected)
	changeData(t, other)
	g.Eventually(func() []string { return rolledEvents(t, selected, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() map[string]string { return get(t, deployment(other, "web", nil, podSpec())).Annotations }).ShouldNot(gomega.HaveKey(ObservedAnnotation))

	// The other namespace joins the scope: first sight, no rollout, then
	// changes roll.
	labelNamespace(t, other, "reroll-test-team", "a")
	recorded(t, deployment(other, "web", nil, podSpec()))
	g.Expect(rolledEvents(t, other, "web")).To(gomega.BeEmpty())
	changeData(t, other)
	g.Eventually(func() []string { return rolledEvents(t, other, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadReconciler_ResourceLabelSelector(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	labelled := configMap(ns, "labelled", map[string]string{"a": "1"})
	labelled.Labels = map[string]string{"reroll-test": "watched"}
	create(t, labelled, configMap(ns, "unlabelled", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("labelled", "unlabelled")))
	create(t, d)
	sel, err := labels.Parse("reroll-test=watched")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	r := startReroll(t, ns, Options{Scope: scope.Scope{ResourceSelector: sel}})
	recorded(t, d)

	g.Expect(r.cachedConfigMap(t, ns, "labelled")).To(gomega.BeTrue())
	g.Expect(r.cachedConfigMap(t, ns, "unlabelled")).To(gomega.BeFalse(), "an object outside the selector is never cached")
	update(t, configMap(ns, "unlabelled", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty())
	update(t, configMap(ns, "labelled", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/labelled changed keys a")))
}

func labelNamespace(t *testing.T, ns, key, value string) {
	t.Helper()
	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	})
}

func TestWorkloadReconciler_IgnoredWorkloadTypes(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{IgnoredWorkloads: []string{"deployments"}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	// Positive control: a StatefulSet, a kind not ignored, reading the same
	// ConfigMap.
	s := statefulSet(ns, "db", autoOn, podSpec(envFrom("cfg")))
	create(t, d, s)
	recorded(t, s)
	changeData(t, ns)
	g.Eventually(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.HaveLen(1))
	g.Consistently(func() map[string]string { return get(t, d).Annotations }).ShouldNot(gomega.HaveKey(ObservedAnnotation))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())
}
