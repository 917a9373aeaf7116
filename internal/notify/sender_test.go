package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reroll/reroll/internal/change"
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

func TestSender_ReportsEachRetryAndTheEnd(t *testing.T) {
	g := gomega.NewWithT(t)
	var mu sync.Mutex
	calls := 0
	var body map[string]any
	var bodyErr error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		bodyErr = json.Unmarshal(b, &body)
	}))
	t.Cleanup(srv.Close)
	s := NewSender(Config{Sink: Endpoint, URL: srv.URL + "/hook?token=secret-token", Backoff: fastBackoff})
	go func() { _ = s.Start(t.Context()) }()

	retries := make(chan error, 10)
	done := make(chan error, 1)
	c := change.Change{Kind: "Deployment", Namespace: "ns", Name: "web", Hash: "h", ObservedAt: 7,
		Objects: []change.Object{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"k"}, Hash: "s"}}}
	g.Expect(s.Send(c, Report{Retrying: func(err error) { retries <- err }, Done: func(err error) { done <- err }})).To(gomega.Succeed())
	g.Eventually(done).Should(gomega.Receive(gomega.BeNil()))
	g.Expect(retries).To(gomega.HaveLen(2), "one report per failed attempt")
	err := <-retries
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("503")))
	g.Expect(err.Error()).NotTo(gomega.ContainSubstring("secret-token"), "errors show the endpoint redacted")
	mu.Lock()
	defer mu.Unlock()
	g.Expect(bodyErr).NotTo(gomega.HaveOccurred(), "the notification is JSON")
	g.Expect(body).To(gomega.HaveKeyWithValue("hash", "h"), "the notification carries the hashes")
	g.Expect(body).To(gomega.HaveKeyWithValue("observedAt", 7.0))
	g.Expect(body["changes"]).To(gomega.ConsistOf(gomega.HaveKeyWithValue("hash", "s")))
}

func TestSender_DoneWithTheLastErrorAndRefusesWhenFull(t *testing.T) {
	g := gomega.NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(srv.Close)
	s := NewSender(Config{Sink: Endpoint, URL: srv.URL, Backoff: fastBackoff, QueueSize: 1})
	done := make(chan error, 1)
	g.Expect(s.Send(change.Change{Name: "a"}, Report{Done: func(err error) { done <- err }})).To(gomega.Succeed())
	g.Expect(s.Send(change.Change{Name: "b"}, Report{})).To(gomega.MatchError(ErrQueueFull), "Send never blocks")
	go func() { _ = s.Start(t.Context()) }()
	g.Eventually(done).Should(gomega.Receive(gomega.MatchError(gomega.ContainSubstring("502"))))
}

func TestRedact(t *testing.T) {
	cases := map[string]struct {
		in   string // an endpoint URL
		want string // what messages may show
	}{
		"host only":          {in: "https://hooks.example", want: "https://hooks.example"},
		"root path":          {in: "https://hooks.example/", want: "https://hooks.example"},
		"token in the path":  {in: "https://hooks.slack.com/services/T0/B0/XYZ", want: "https://hooks.slack.com/..."},
		"user information":   {in: "https://user:pw@hooks.example", want: "https://hooks.example"},
		"token in the query": {in: "http://hooks.example:8080?token=x", want: "http://hooks.example:8080/..."},
		"not a URL":          {in: "::", want: "(unparsable URL)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Redact(c.in); got != c.want {
				t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
