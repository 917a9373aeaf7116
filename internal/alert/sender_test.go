package alert

import (
	"github.com/reroll/reroll/internal/change"

	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reroll/reroll/internal/metrics"
)

// fastBackoff retries at once, so the tests do not wait.
var fastBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}

func TestSender_DropsWhenQueueIsFull(t *testing.T) {
	g := gomega.NewWithT(t)
	// Not started: nothing drains the queue.
	s := NewSender(Config{Sink: GChat, URL: "http://127.0.0.1:1", QueueSize: 2})
	before := metrics.AlertCount(string(GChat), metrics.AlertDropped)
	done := make(chan struct{})
	go func() {
		for range 5 {
			s.Alert(t.Context(), change.Change{Kind: "Deployment", Namespace: "ns", Name: "web"})
		}
		close(done)
	}()
	g.Eventually(done).Should(gomega.BeClosed(), "Alert never blocks")
	g.Expect(metrics.AlertCount(string(GChat), metrics.AlertDropped) - before).To(gomega.Equal(3.0))
	g.Expect(s.queue).To(gomega.HaveLen(2))
}

func TestSender_RetriesUntilTheSinkAccepts(t *testing.T) {
	g := gomega.NewWithT(t)
	var mu sync.Mutex
	calls := 0
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			got = append(got, m)
		}
	}))
	t.Cleanup(srv.Close)
	received := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}
	s := NewSender(Config{Sink: Slack, URL: srv.URL, Backoff: fastBackoff, AdditionalInfo: "cluster a"})
	sent, failed := metrics.AlertCount(string(Slack), metrics.AlertSent), metrics.AlertCount(string(Slack), metrics.AlertFailed)
	go func() { _ = s.Start(t.Context()) }()

	s.Alert(t.Context(), change.Change{Kind: "Deployment", Namespace: "ns", Name: "web", Objects: []change.Object{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"k"}}}})
	g.Eventually(received).Should(gomega.HaveLen(1))
	g.Expect(received()[0]["text"]).To(gomega.Equal("Reroll rolled Deployment ns/web after ConfigMap/cfg changed keys k\ncluster a"))
	g.Eventually(func() float64 { return metrics.AlertCount(string(Slack), metrics.AlertSent) - sent }).Should(gomega.Equal(1.0))
	g.Expect(metrics.AlertCount(string(Slack), metrics.AlertFailed)).To(gomega.Equal(failed), "a retried success is not a failure")
}

func TestSender_CountsFailureAfterLastRetry(t *testing.T) {
	g := gomega.NewWithT(t)
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	s := NewSender(Config{Sink: Teams, URL: srv.URL, Backoff: fastBackoff})
	failed := metrics.AlertCount(string(Teams), metrics.AlertFailed)
	go func() { _ = s.Start(t.Context()) }()
	s.Alert(t.Context(), change.Change{Kind: "StatefulSet", Namespace: "ns", Name: "db"})
	g.Eventually(func() float64 { return metrics.AlertCount(string(Teams), metrics.AlertFailed) - failed }).Should(gomega.Equal(1.0))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(calls).To(gomega.Equal(fastBackoff.Steps))
}

func TestSender_UsesTheProxy(t *testing.T) {
	g := gomega.NewWithT(t)
	var mu sync.Mutex
	var target string
	proxy := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		target = r.URL.String() // a proxy receives the absolute URL
	}))
	t.Cleanup(proxy.Close)
	u, err := http.NewRequest(http.MethodGet, proxy.URL, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s := NewSender(Config{Sink: Webhook, URL: "http://sink.invalid/hook", Proxy: u.URL, Backoff: fastBackoff})
	go func() { _ = s.Start(t.Context()) }()
	s.Alert(t.Context(), change.Change{Kind: "Deployment", Namespace: "ns", Name: "web"})
	g.Eventually(func() string {
		mu.Lock()
		defer mu.Unlock()
		return target
	}).Should(gomega.Equal("http://sink.invalid/hook"))
}
