package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := map[string]struct {
		method string  // HTTP method
		url    string  // path and query
		want   Request // verb and resource
	}{
		"get namespaced":      {http.MethodGet, "/api/v1/namespaces/ns/configmaps/cfg", Request{Verb: "get", Resource: "configmaps"}},
		"list namespaced":     {http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?limit=500", Request{Verb: "list", Resource: "deployments"}},
		"list cluster-wide":   {http.MethodGet, "/api/v1/secrets", Request{Verb: "list", Resource: "secrets"}},
		"watch":               {http.MethodGet, "/apis/apps/v1/deployments?watch=true&sendInitialEvents=true", Request{Verb: "watch", Resource: "deployments"}},
		"watch with 1":        {http.MethodGet, "/api/v1/namespaces/ns/secrets?watch=1", Request{Verb: "watch", Resource: "secrets"}},
		"patch":               {http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/web", Request{Verb: "patch", Resource: "deployments"}},
		"patch subresource":   {http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/web/status", Request{Verb: "patch", Resource: "deployments/status"}},
		"create":              {http.MethodPost, "/api/v1/namespaces/ns/events", Request{Verb: "create", Resource: "events"}},
		"update":              {http.MethodPut, "/api/v1/namespaces/ns/configmaps/cfg", Request{Verb: "update", Resource: "configmaps"}},
		"delete":              {http.MethodDelete, "/api/v1/namespaces/ns/secrets/s", Request{Verb: "delete", Resource: "secrets"}},
		"deletecollection":    {http.MethodDelete, "/api/v1/namespaces/ns/secrets", Request{Verb: "deletecollection", Resource: "secrets"}},
		"namespace itself":    {http.MethodGet, "/api/v1/namespaces/ns", Request{Verb: "get", Resource: "namespaces"}},
		"namespaces list":     {http.MethodGet, "/api/v1/namespaces", Request{Verb: "list", Resource: "namespaces"}},
		"discovery":           {http.MethodGet, "/apis", Request{Verb: "get"}},
		"group discovery":     {http.MethodGet, "/apis/apps/v1", Request{Verb: "get"}},
		"core discovery":      {http.MethodGet, "/api/v1", Request{Verb: "get"}},
		"non-resource":        {http.MethodGet, "/version", Request{Verb: "get"}},
		"namespace subobject": {http.MethodPut, "/api/v1/namespaces/ns/finalize", Request{Verb: "update", Resource: "namespaces/finalize"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.url, nil)
			if got := Classify(req); got != c.want {
				t.Errorf("Classify(%s %s) = %+v, want %+v", c.method, c.url, got, c.want)
			}
		})
	}
}

func TestRequestCounter_CountsByVerbResourceAndCode(t *testing.T) {
	c := NewRequestCounter()
	rt := c.Wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/broken") {
			return nil, errors.New("connection refused")
		}
		return &http.Response{StatusCode: http.StatusConflict}, nil
	}))
	for _, path := range []string{"/apis/apps/v1/namespaces/a/deployments/x", "/apis/apps/v1/namespaces/b/deployments/y", "/apis/apps/v1/namespaces/b/deployments/broken"} {
		resp, _ := rt.RoundTrip(httptest.NewRequest(http.MethodPatch, path, nil))
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
	}
	got := c.Counts()
	want := map[Request]int64{
		{Verb: "patch", Resource: "deployments", Code: http.StatusConflict}: 2,
		{Verb: "patch", Resource: "deployments", Code: 0}:                   1,
	}
	if len(got) != len(want) {
		t.Fatalf("Counts() = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Counts()[%+v] = %d, want %d", k, got[k], v)
		}
	}
}
