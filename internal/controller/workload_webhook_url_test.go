package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_WebhookURLReceivesChangeInsteadOfRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	var mu sync.Mutex
	var got []change.Change
	failFirst := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		// The first call fails: Reroll must retry and record nothing until
		// the webhook accepts.
		if failFirst {
			failFirst = false
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var p change.Change
		if json.Unmarshal(b, &p) == nil {
			got = append(got, p)
		}
	}))
	t.Cleanup(srv.Close)
	payloads := func() []change.Change {
		mu.Lock()
		defer mu.Unlock()
		return append([]change.Change(nil), got...)
	}

	ns := newNamespace(t)
	// The URL carries a token, as Slack's and most endpoints' do.
	rr := startReroll(t, ns, Options{PlanOptions: plan.Options{WebhookURL: srv.URL + "/hooks/SECRET-IN-PATH?token=SECRET-IN-QUERY"}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1", "b": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	g.Eventually(payloads).Should(gomega.HaveLen(1))
	p := payloads()[0]
	g.Expect(p.Kind).To(gomega.Equal("Deployment"))
	g.Expect(p.Namespace).To(gomega.Equal(ns))
	g.Expect(p.Name).To(gomega.Equal("web"))
	g.Expect(p.Hash).NotTo(gomega.BeEmpty())
	g.Expect(p.Objects).To(gomega.Equal([]change.Object{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"b"}, Hash: reloaderSHA1("a=1;b=2")}}))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonNotified) }).Should(gomega.HaveLen(1))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonRollFailed) }).ShouldNot(gomega.BeEmpty(), "the failed first call was reported")
	// Nothing rolled: the pod template is untouched.
	g.Consistently(func() map[string]string { return get(t, d).Spec.Template.Annotations }).ShouldNot(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Expect(payloads()).To(gomega.HaveLen(1), "once accepted, the change is not sent again")

	// No output names more of the URL than its scheme and host.
	events := append(eventsWithReason(t, ns, "web", ReasonNotified), eventsWithReason(t, ns, "web", ReasonRollFailed)...)
	g.Expect(events).To(gomega.ContainElement(gomega.ContainSubstring(srv.URL)))
	for _, e := range events {
		g.Expect(e).NotTo(gomega.ContainSubstring("SECRET"))
	}
	g.Expect(rr.logs.String()).To(gomega.ContainSubstring("Notified the notification endpoint"))
	g.Expect(rr.logs.String()).NotTo(gomega.ContainSubstring("SECRET"))
}
