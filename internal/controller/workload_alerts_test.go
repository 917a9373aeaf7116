package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_AlertsAfterRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	received := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}

	ns := newNamespace(t)
	startReroll(t, ns, Options{Alerter: notify.NewSender(notify.Config{Sink: notify.Webhook, URL: srv.URL, AdditionalInfo: "Cluster: test"})})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1", "b": "old-value-x7q"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)
	g.Consistently(received).Should(gomega.BeEmpty(), "first sight rolls nothing and alerts nothing")

	const newValue = "new-value-k9w"
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = newValue })
	g.Eventually(received).Should(gomega.HaveLen(1))
	a := received()[0]
	g.Expect(a).To(gomega.HaveKeyWithValue("kind", "Deployment"))
	g.Expect(a).To(gomega.HaveKeyWithValue("namespace", ns))
	g.Expect(a).To(gomega.HaveKeyWithValue("name", "web"))
	g.Expect(a).To(gomega.HaveKeyWithValue("changes", []any{map[string]any{"kind": "ConfigMap", "name": "cfg", "keys": []any{"b"}}}))
	g.Expect(a).To(gomega.HaveKeyWithValue("additionalInfo", "Cluster: test"))
	body, err := json.Marshal(a)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(body)).NotTo(gomega.ContainSubstring(newValue), "values never leave the cluster")
	g.Expect(string(body)).NotTo(gomega.ContainSubstring("old-value-x7q"), "values never leave the cluster")
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Consistently(received).Should(gomega.HaveLen(1), "one rollout, one alert")
}

func TestWorkloadReconciler_FailingAlertSinkDoesNotStopRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)

	ns := newNamespace(t)
	sender := notify.NewSender(notify.Config{Sink: notify.Slack, URL: srv.URL,
		Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 2}})
	startReroll(t, ns, Options{Alerter: sender})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() map[string]string { return get(t, d).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Eventually(func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}).Should(gomega.Equal(2), "the alert was tried with retries, then given up")
}
