package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Request is one kind of Kubernetes API request, as the API server's audit
// log and RBAC name it.
type Request struct {
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete or deletecollection; for a path that names no resource (such as
	// /api or /version) it is the lower-case HTTP method.
	Verb string
	// Resource is the plural resource, with "/<subresource>" when there is
	// one (e.g. "deployments", "deployments/status"); "" for a path that
	// names no resource.
	Resource string
	// Code is the HTTP status code of the answer, or 0 when no answer came.
	Code int
}

// RequestCounter counts the API requests that pass through the transports
// it wraps. It is a prometheus.Collector of reroll_api_requests_total
// {verb, resource, code}. The zero value is not usable; use
// NewRequestCounter. It is safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[Request]int64
}

// NewRequestCounter returns a counter with no requests counted.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[Request]int64{}}
}

// Wrap returns rt with every request counted; it fits rest.Config.Wrap. A
// watch is counted once, when its response headers arrive.
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		r := Classify(req)
		if resp != nil {
			r.Code = resp.StatusCode
		}
		c.mu.Lock()
		c.counts[r]++
		c.mu.Unlock()
		return resp, err
	})
}

// Counts returns a copy of the counts so far.
func (c *RequestCounter) Counts() map[Request]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Request]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

var requestsDesc = prometheus.NewDesc(
	"reroll_api_requests_total",
	"Kubernetes API requests made by Reroll, by Kubernetes verb, resource and HTTP status code (0: no answer).",
	[]string{"verb", "resource", "code"}, nil,
)

// Describe implements prometheus.Collector.
func (c *RequestCounter) Describe(ch chan<- *prometheus.Desc) { ch <- requestsDesc }

// Collect implements prometheus.Collector.
func (c *RequestCounter) Collect(ch chan<- prometheus.Metric) {
	for r, n := range c.Counts() {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), r.Verb, r.Resource, strconv.Itoa(r.Code))
	}
}

// Classify returns the verb and resource of an API request from its method,
// path and query, the way the API server's request info does for the paths
// clients use: /api/v1/... and /apis/<group>/<version>/..., namespaced or
// not. Code is left 0.
func Classify(req *http.Request) Request {
	method := strings.ToLower(req.Method)
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return Request{Verb: method}
	}
	// namespaces/<ns>/<resource>/... is a namespaced resource; namespaces
	// and namespaces/<name>[/status|/finalize] are the namespaces themselves,
	// as the API server's request info tells them apart.
	if len(parts) >= 3 && parts[0] == "namespaces" && !(len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")) {
		parts = parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return Request{Verb: method}
	}
	r := Request{Resource: parts[0]}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		r.Resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case isTrue(req.URL.Query().Get("watch")):
			r.Verb = "watch"
		case named:
			r.Verb = "get"
		default:
			r.Verb = "list"
		}
	case http.MethodPost:
		r.Verb = "create"
	case http.MethodPut:
		r.Verb = "update"
	case http.MethodPatch:
		r.Verb = "patch"
	case http.MethodDelete:
		r.Verb = "delete"
		if !named {
			r.Verb = "deletecollection"
		}
	default:
		r.Verb = method
	}
	return r
}

func isTrue(v string) bool { return v == "true" || v == "1" }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
