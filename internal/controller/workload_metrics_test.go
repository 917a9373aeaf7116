package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestWorkloadReconciler_CountsRolloutsPerNamespace is not parallel: the
// latency histogram and the skip counter have no namespace label, so the
// exact counts below hold only while no other test rolls anything (Go runs
// the parallel tests after every serial one).
func TestWorkloadReconciler_CountsRolloutsPerNamespace(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), secret(ns, "db", map[string]string{"password": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}})
	}))
	create(t, d)
	recorded(t, d)
	latencies := histogramCount(t, "reroll_change_to_rollout_seconds")
	skips := counter(t, "reroll_skipped_total", map[string]string{"reason": "no_consumed_key_changed"})
	rollouts := func(source string) float64 {
		return counter(t, "reroll_rollouts_total", map[string]string{"kind": "Deployment", "namespace": ns, "source_kind": source, "result": "success"})
	}
	g.Expect(rollouts("ConfigMap")+rollouts("Secret")).To(gomega.BeZero(), "first sight rolls nothing")

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	update(t, secret(ns, "db", nil), func(s *corev1.Secret) { s.Data["password"] = []byte("2") })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
	g.Eventually(func() []float64 { return []float64{rollouts("ConfigMap"), rollouts("Secret")} }).Should(gomega.Equal([]float64{1, 1}))
	g.Expect(histogramCount(t, "reroll_change_to_rollout_seconds")).To(gomega.Equal(latencies+2), "one latency sample per rollout")

	// A label-only change never reaches Reconcile: no rollout, no skip
	// (which a reconcile that found nothing to roll would count), no latency
	// sample. The data change after it, to the same object, comes through
	// the same watch after it, so once that one is counted the label-only
	// one was processed.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"x": "y"} })
	noSkip := func() float64 {
		return counter(t, "reroll_skipped_total", map[string]string{"reason": "no_consumed_key_changed"})
	}
	g.Consistently(noSkip).Should(gomega.Equal(skips), "the label-only change was not counted as skipped")
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(3))
	g.Eventually(func() []float64 { return []float64{rollouts("ConfigMap"), rollouts("Secret")} }).Should(gomega.Equal([]float64{2, 1}))
	g.Consistently(func() []float64 { return []float64{rollouts("ConfigMap"), rollouts("Secret")} }).Should(gomega.Equal([]float64{2, 1}))
	g.Expect(histogramCount(t, "reroll_change_to_rollout_seconds")).To(gomega.Equal(latencies + 3))
	g.Expect(noSkip()).To(gomega.Equal(skips))
}

// counter returns the value of the counter with exactly these labels in
// controller-runtime's registry, 0 when it has none.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	for _, m := range family(t, name) {
		if hasLabels(m, labels) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// histogramCount returns the sample count of an unlabelled histogram.
func histogramCount(t *testing.T, name string) uint64 {
	t.Helper()
	for _, m := range family(t, name) {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func family(t *testing.T, name string) []*dto.Metric {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return len(got) == len(want)
}

// TestWorkloadReconciler_CountsPatternsRefusedForCost: a change that reaches
// a workload whose list patterns cost too much to match (plan.Refused) rolls
// nothing and is counted as skipped for that reason, as every other change
// that rolls nothing is. Not parallel: the counter has no namespace label.
func TestWorkloadReconciler_CountsPatternsRefusedForCost(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	// Eight names of 245 characters: 64 entries of about 340 instructions
	// each cost about 5.4e6 units per name, past annotation.MaxMatchCost
	// (2e7) by the fourth.
	for i := range 8 {
		create(t, configMap(ns, fmt.Sprintf("%s-%04d", strings.Repeat("n", 240), i), map[string]string{"a": "1"}))
	}
	create(t, deployment(ns, "costly", tenantList(func(j int) string { return "(?:.?){80}#" + strings.Repeat("b", j%10) }), podSpec()))
	refused := func() float64 {
		return counter(t, "reroll_skipped_total", map[string]string{"reason": "match_cost_exceeded"})
	}
	before := refused()
	startReroll(t, ns, Options{})
	// Positive control: Reroll considered the workload and refused its
	// patterns, with the Warning naming the annotation.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "costly", ReasonInvalidAnnotation) }).Should(
		gomega.ContainElement(gomega.ContainSubstring("configmap.reloader.stakater.com/reload")))
	// The first reconcile found no change to skip.
	g.Expect(refused()).To(gomega.Equal(before))

	update(t, configMap(ns, strings.Repeat("n", 240)+"-0000", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(refused).Should(gomega.Equal(before + 1))
	g.Expect(rolledEvents(t, ns, "costly")).To(gomega.BeEmpty())
}
