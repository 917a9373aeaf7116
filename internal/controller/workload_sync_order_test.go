package controller

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/revert"
)

// requestLog records, in the order their answers came, the requests that
// are not the cache's (every verb but list and watch) that pass through
// the transports it wraps.
type requestLog struct {
	mu       sync.Mutex
	requests []metrics.Request
}

// wrap fits rest.Config.Wrap.
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		r := metrics.Classify(req)
		if r.Verb == "list" || r.Verb == "watch" {
			return resp, err
		}
		if resp != nil {
			r.Code = resp.StatusCode
		}
		l.mu.Lock()
		l.requests = append(l.requests, r)
		l.mu.Unlock()
		return resp, err
	})
}

// len is how many requests were recorded.
func (l *requestLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.requests)
}

// since returns the requests after the first n.
func (l *requestLog) since(n int) []metrics.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]metrics.Request(nil), l.requests[n:]...)
}

// settled waits until l has recorded nothing new for two seconds and
// returns how many requests it holds.
func (l *requestLog) settled(t *testing.T) int {
	t.Helper()
	last := -1
	newT(t).Eventually(func() bool {
		n := l.len()
		same := n == last
		last = n
		return same
	}).WithPolling(2 * time.Second).Should(gomega.BeTrue())
	return last
}

// TestWorkloadReconciler_OneReconcileReadsThenWritesInOrder counts the
// requests of one reconcile that gathers, decides and writes: an operator
// puts back the pod template Reroll changed, and the reconcile that finds
// it reads the workload's field managers from the API server (the one read
// the cache cannot answer, made only because a revert is suspected), then
// patches the workload once (the revert's record), then creates its
// TemplateReverted Event, and makes no other request. The rollout before
// it (the positive control) costs one patch and one Event, no read.
func TestWorkloadReconciler_OneReconcileReadsThenWritesInOrder(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	log := &requestLog{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(log.wrap)
	startRerollAs(t, cfg, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	g.Expect(k8s.Create(t.Context(), d, client.FieldOwner("my-operator"))).To(gomega.Succeed())
	recorded(t, d)
	before := log.settled(t)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	rolled := log.settled(t)
	g.Expect(log.since(before)).To(gomega.Equal([]metrics.Request{
		{Verb: "patch", Resource: "deployments", Code: http.StatusOK},
		{Verb: "create", Resource: "events", Code: http.StatusCreated},
	}), "a rollout reads nothing beyond the cache")
	g.Expect(get(t, d).Annotations).To(gomega.HaveKey(revert.PatchAnnotation))

	update(t, d, func(dep *appsv1.Deployment) { delete(dep.Spec.Template.Annotations, "reroll.dev/config-hash") })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", ReasonTemplateReverted) }).Should(gomega.HaveLen(1))
	log.settled(t)
	after := log.since(rolled)
	// The Event is sent by the recorder's own goroutine, so a read of a
	// later reconcile may come before it: the workload's requests are
	// checked in order, and the Event after the patch.
	var workload []metrics.Request
	patched, evented := -1, -1
	for i, r := range after {
		switch {
		case r.Resource == "deployments":
			workload = append(workload, r)
			if r.Verb == "patch" {
				patched = i
			}
		case r == metrics.Request{Verb: "create", Resource: "events", Code: http.StatusCreated} && evented < 0:
			evented = i
		default:
			t.Errorf("after the revert, a request that is neither the workload's nor its one Event: %v in %v", r, after)
		}
	}
	g.Expect(len(workload)).To(gomega.BeNumerically(">=", 2), "%v", after)
	g.Expect(workload[:2]).To(gomega.Equal([]metrics.Request{
		{Verb: "get", Resource: "deployments", Code: http.StatusOK},
		{Verb: "patch", Resource: "deployments", Code: http.StatusOK},
	}), "%v", after)
	g.Expect(evented).To(gomega.BeNumerically(">", patched), "the TemplateReverted Event follows the patch: %v", after)
	// A reconcile that runs before the cache holds the revert's own
	// record reads the workload from the API server once more
	// (workloadView.Current) and writes nothing: on a loaded machine the
	// informer may lag. Nothing else may follow.
	for _, r := range workload[2:] {
		g.Expect(r).To(gomega.Equal(metrics.Request{Verb: "get", Resource: "deployments", Code: http.StatusOK}), "after the revert's writes, only a read: %v", after)
	}
	g.Expect(revert.ParseReverted(get(t, d).Annotations[revert.RevertedAnnotation])).NotTo(gomega.BeNil())
}
