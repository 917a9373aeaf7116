package controller

import (
	"slices"
	"testing"

	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reroll/reroll/internal/metrics"
)

// reloaderSeries is one series that Stakater Reloader v1.4.21 registers.
type reloaderSeries struct {
	// typ is its Prometheus type.
	typ dto.MetricType
	// labels are its label names, sorted.
	labels []string
	// exposed is false for the series Reroll has no notion for
	// (docs/metrics.md says why); they must then be absent, not half there.
	exposed bool
}

// reloaderMetrics are the series of Reloader v1.4.21's NewCollectors, as
// written in internal/pkg/metrics/prometheus.go (`git -C
// /work/.mirror/stakater+Reloader/repo show
// v1.4.21:internal/pkg/metrics/prometheus.go`): the namespace "reloader",
// each Name, the type of its constructor and its label names.
var reloaderMetrics = map[string]reloaderSeries{
	"reloader_reload_executed_total":              {typ: dto.MetricType_COUNTER, labels: []string{"success"}, exposed: true},
	"reloader_reload_executed_total_by_namespace": {typ: dto.MetricType_COUNTER, labels: []string{"namespace", "success"}, exposed: true},
	"reloader_reconcile_total":                    {typ: dto.MetricType_COUNTER, labels: []string{"result"}, exposed: true},
	"reloader_reconcile_duration_seconds":         {typ: dto.MetricType_HISTOGRAM, labels: []string{"result"}, exposed: true},
	"reloader_action_total":                       {typ: dto.MetricType_COUNTER, labels: []string{"result", "workload_kind"}, exposed: true},
	"reloader_action_latency_seconds":             {typ: dto.MetricType_HISTOGRAM, labels: []string{"workload_kind"}, exposed: true},
	"reloader_skipped_total":                      {typ: dto.MetricType_COUNTER, labels: []string{"reason"}, exposed: true},
	"reloader_workqueue_depth":                    {typ: dto.MetricType_GAUGE, labels: []string{}},
	"reloader_workqueue_adds_total":               {typ: dto.MetricType_COUNTER, labels: []string{}},
	"reloader_workqueue_latency_seconds":          {typ: dto.MetricType_HISTOGRAM, labels: []string{}},
	"reloader_errors_total":                       {typ: dto.MetricType_COUNTER, labels: []string{"type"}, exposed: true},
	"reloader_retries_total":                      {typ: dto.MetricType_COUNTER, labels: []string{}, exposed: true},
	"reloader_events_received_total":              {typ: dto.MetricType_COUNTER, labels: []string{"event_type", "resource_type"}, exposed: true},
	"reloader_events_processed_total":             {typ: dto.MetricType_COUNTER, labels: []string{"event_type", "resource_type", "result"}},
	"reloader_workloads_scanned_total":            {typ: dto.MetricType_COUNTER, labels: []string{"kind"}},
	"reloader_workloads_matched_total":            {typ: dto.MetricType_COUNTER, labels: []string{"kind"}, exposed: true},
}

// TestWorkloadReconciler_ServesReloadersSeries rolls a Deployment on a
// ConfigMap change, skips one for a change of a key it does not read, then
// scrapes controller-runtime's registry (what /metrics serves) and checks
// every Reloader series by name, type and label names, and the values the
// two changes must have added. It is not parallel: most series have no
// namespace label, so the exact counts hold only while no other test rolls
// anything (Go runs the parallel tests after every serial one).
func TestWorkloadReconciler_ServesReloadersSeries(t *testing.T) {
	g := newT(t)
	// What cmd/reroll does with METRICS_COUNT_BY_NAMESPACE=enabled.
	g.Expect(metrics.RegisterReloaderByNamespace(ctrlmetrics.Registry)).To(gomega.Succeed())
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(ns, "keyed", map[string]string{"used": "1", "unused": "1"}))
	web := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	api := deployment(ns, "api", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "USED", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keyed"}, Key: "used"}}}}
	}))
	create(t, web, api)
	recorded(t, web)
	recorded(t, api)
	reloads := counter(t, "reloader_reload_executed_total", map[string]string{"success": "true"})
	actions := counter(t, "reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "success"})
	skips := counter(t, "reloader_skipped_total", map[string]string{"reason": "no_data_change"})
	updates := counter(t, "reloader_events_received_total", map[string]string{"event_type": "update", "resource_type": "configMaps"})
	matched := counter(t, "reloader_workloads_matched_total", map[string]string{"kind": "Deployment"})

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	update(t, configMap(ns, "keyed", nil), func(cm *corev1.ConfigMap) { cm.Data["unused"] = "2" })

	// This test's namespace is its own: its count is exact.
	byNamespace := func() float64 {
		return counter(t, "reloader_reload_executed_total_by_namespace", map[string]string{"success": "true", "namespace": ns})
	}
	g.Eventually(byNamespace).Should(gomega.Equal(1.0))
	// One rollout (web), one skip (api reads only "used"), two ConfigMap
	// updates, each mapped to one Deployment.
	g.Eventually(func() float64 {
		return counter(t, "reloader_skipped_total", map[string]string{"reason": "no_data_change"})
	}).Should(gomega.Equal(skips + 1))
	g.Expect(counter(t, "reloader_reload_executed_total", map[string]string{"success": "true"})).To(gomega.Equal(reloads + 1))
	g.Expect(counter(t, "reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "success"})).To(gomega.Equal(actions + 1))
	g.Expect(counter(t, "reloader_events_received_total", map[string]string{"event_type": "update", "resource_type": "configMaps"})).To(gomega.Equal(updates + 2))
	g.Expect(counter(t, "reloader_workloads_matched_total", map[string]string{"kind": "Deployment"})).To(gomega.Equal(matched + 2))
	g.Consistently(byNamespace).Should(gomega.Equal(1.0))
	g.Expect(rolledEvents(t, ns, "api")).To(gomega.BeEmpty())

	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	got := map[string]*dto.MetricFamily{}
	for _, f := range families {
		got[f.GetName()] = f
	}
	for name, want := range reloaderMetrics {
		f, ok := got[name]
		if !want.exposed {
			g.Expect(ok).To(gomega.BeFalse(), "%s is documented as not exposed", name)
			continue
		}
		g.Expect(ok).To(gomega.BeTrue(), "%s is not served", name)
		g.Expect(f.GetType()).To(gomega.Equal(want.typ), "type of %s", name)
		g.Expect(f.GetMetric()).NotTo(gomega.BeEmpty(), "%s has no sample", name)
		for _, m := range f.GetMetric() {
			names := []string{}
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			slices.Sort(names)
			g.Expect(names).To(gomega.Equal(want.labels), "label names of %s", name)
		}
	}
}
