package controller

import (
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_ReloaderDialectWritesLastReloadedFrom(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "foo", map[string]string{"a": "1"}))
	d := deployment(ns, "web", reloaderAutoOn, podSpec(envFrom("foo")))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "foo", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })

	g.Eventually(func() map[string]string { return get(t, d).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.LastReloadedFromAnnotation))
	var rec trigger.ReloadedFrom
	g.Expect(json.Unmarshal([]byte(get(t, d).Spec.Template.Annotations[trigger.LastReloadedFromAnnotation]), &rec)).To(gomega.Succeed())
	g.Expect(rec.ObservedAt).To(gomega.BeNumerically(">", 0))
	rec.ObservedAt = 0
	g.Expect(rec).To(gomega.Equal(trigger.ReloadedFrom{Type: "CONFIGMAP", Name: "foo", Namespace: ns, Hash: reloaderSHA1("a=2"), ContainerRefs: []string{"app"}}))
	g.Expect(get(t, d).Spec.Template.Annotations).NotTo(gomega.HaveKey(trigger.ConfigHashAnnotation))
}

func TestWorkloadReconciler_RegexListsMatchAnchored(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t,
		configMap(ns, "app-one", map[string]string{"a": "1"}),
		configMap(ns, "my-app-one", map[string]string{"a": "1"}),
		configMap(ns, "literal", map[string]string{"a": "1"}),
	)
	d := deployment(ns, "web", map[string]string{
		// An invalid pattern between two valid ones: a Warning, and the
		// others keep working.
		"configmap.reloader.stakater.com/reload": "app-.*,bad[,literal",
	}, podSpec())
	create(t, d)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonInvalidAnnotation) }).Should(
		gomega.ContainElement(gomega.ContainSubstring(`"bad[" is not a valid regular expression`)))
	recorded(t, d)

	// "app-.*" is anchored: it does not match my-app-one.
	update(t, configMap(ns, "my-app-one", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty())

	update(t, configMap(ns, "app-one", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/app-one changed keys a")))
	update(t, configMap(ns, "literal", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("ConfigMap/literal changed keys a")))

	// A ConfigMap created later that matches the pattern is picked up.
	create(t, configMap(ns, "app-two", map[string]string{"a": "1"}))
	g.Eventually(func() string { return get(t, d).Annotations[ObservedAnnotation] }).Should(gomega.ContainSubstring("ConfigMap/app-two"))
	update(t, configMap(ns, "app-two", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ContainElement(gomega.HaveSuffix("ConfigMap/app-two changed keys a")))
}

func TestWorkloadReconciler_SearchNeedsMatch(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	matched := configMap(ns, "matched", map[string]string{"a": "1"})
	matched.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
	create(t, matched, configMap(ns, "unmatched", map[string]string{"a": "1"}))
	searching := deployment(ns, "searching", map[string]string{"reloader.stakater.com/search": "true"}, podSpec(envFrom("matched", "unmatched")))
	// Match without search: the annotation on the ConfigMap alone opts
	// nothing in.
	notSearching := deployment(ns, "not-searching", map[string]string{"configmap.reloader.stakater.com/reload": "other"}, podSpec(envFrom("matched")))
	create(t, searching, notSearching)
	recorded(t, searching)
	recorded(t, notSearching)

	update(t, configMap(ns, "unmatched", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	update(t, configMap(ns, "matched", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "searching") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/matched changed keys a")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "not-searching") }).Should(gomega.BeEmpty())
	g.Expect(rolledEvents(t, ns, "searching")).To(gomega.HaveLen(1), "the unmatched ConfigMap never counted")
}

func TestWorkloadReconciler_ExcludeIgnoreAndTypedAuto(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	ignored := configMap(ns, "ignored", map[string]string{"a": "1"})
	ignored.Annotations = map[string]string{"reloader.stakater.com/ignore": "true"}
	create(t, ignored, configMap(ns, "excluded", map[string]string{"a": "1"}), configMap(ns, "cfg", map[string]string{"a": "1"}),
		secret(ns, "creds", map[string]string{"k": "1"}))
	spec := podSpec(envFrom("ignored", "excluded", "cfg"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}})
	})
	auto := deployment(ns, "auto", map[string]string{
		"reloader.stakater.com/auto":                      "true",
		"configmaps.exclude.reloader.stakater.com/reload": "excluded",
	}, spec)
	typed := deployment(ns, "typed", map[string]string{"secret.reloader.stakater.com/auto": "true"}, spec)
	create(t, auto, typed)
	recorded(t, auto)
	recorded(t, typed)

	for _, name := range []string{"ignored", "excluded", "cfg"} {
		update(t, configMap(ns, name, nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	}
	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["k"] = []byte("2") })

	// auto: only cfg and creds count (ignore and exclude beat auto).
	g.Eventually(func() string { return get(t, auto).Annotations[ObservedAnnotation] }).Should(gomega.And(
		gomega.ContainSubstring(`"Secret/creds":{"k":"d4735e3a265e16ee"}`), gomega.ContainSubstring("ConfigMap/cfg")))
	g.Expect(get(t, auto).Annotations[ObservedAnnotation]).NotTo(gomega.Or(gomega.ContainSubstring("ConfigMap/ignored"), gomega.ContainSubstring("ConfigMap/excluded")))
	// typed secret auto: only creds counts.
	g.Eventually(func() []string { return rolledEvents(t, ns, "typed") }).Should(gomega.ConsistOf(gomega.HaveSuffix("Secret/creds changed keys k")))
	g.Eventually(func() []string { return rolledEvents(t, ns, "auto") }).ShouldNot(gomega.BeEmpty())
	for _, note := range rolledEvents(t, ns, "auto") {
		g.Expect(note).NotTo(gomega.Or(gomega.ContainSubstring("ignored"), gomega.ContainSubstring("excluded")))
	}
}

func TestWorkloadReconciler_AutoReloadAllAndIgnoredResourceType(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Annotations: annotation.Config{Names: annotation.DefaultNames(), AutoReloadAll: true, IgnoreSecrets: true}}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), secret(ns, "creds", map[string]string{"k": "1"}))
	spec := podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}})
	})
	everyone := deployment(ns, "unannotated", nil, spec)
	optedOut := deployment(ns, "opted-out", map[string]string{"reloader.stakater.com/auto": "false"}, spec)
	create(t, everyone, optedOut)
	recorded(t, everyone)

	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["k"] = []byte("2") })
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "unannotated") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "opted-out") }).Should(gomega.BeEmpty())
	g.Expect(get(t, optedOut).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
}
