package controller

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/reroll/reroll/internal/metrics"
)

// writeLog records, in the order their answers came, the writes (every
// request but get, list and watch) that pass through the transports it
// wraps.
type writeLog struct {
	mu     sync.Mutex
	writes []metrics.Request
}

// wrap fits rest.Config.Wrap.
func (l *writeLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		r := metrics.Classify(req)
		if r.Verb == "get" || r.Verb == "list" || r.Verb == "watch" {
			return resp, err
		}
		if resp != nil {
			r.Code = resp.StatusCode
		}
		l.mu.Lock()
		l.writes = append(l.writes, r)
		l.mu.Unlock()
		return resp, err
	})
}

// since returns the writes after the first n.
func (l *writeLog) since(n int) []metrics.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]metrics.Request(nil), l.writes[n:]...)
}

// len is how many writes were recorded.
func (l *writeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// writesSettled waits until log has recorded nothing new for two seconds and
// returns how many writes it holds.
func writesSettled(t *testing.T, log *writeLog) int {
	t.Helper()
	last := -1
	newT(t).Eventually(func() bool {
		n := log.len()
		same := n == last
		last = n
		return same
	}).WithPolling(2 * time.Second).Should(gomega.BeTrue())
	return last
}

// TestWorkloadReconciler_RolloutWritesTheWorkloadThenItsEvent pins the order
// of the writes of one reconcile that rolls a Deployment, with the default
// options: the workload is patched once (record and trigger in one patch),
// then its Rolled Event is created, and nothing else is written. Issue #31
// moves these writes into one apply step; this test says that the move
// keeps their order.
func TestWorkloadReconciler_RolloutWritesTheWorkloadThenItsEvent(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	log := &writeLog{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(log.wrap)
	startRerollAs(t, cfg, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)
	before := writesSettled(t, log)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	writesSettled(t, log)
	g.Expect(log.since(before)).To(gomega.Equal([]metrics.Request{
		{Verb: "patch", Resource: "deployments", Code: http.StatusOK},
		{Verb: "create", Resource: "events", Code: http.StatusCreated},
	}))
}
