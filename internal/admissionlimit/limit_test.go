package admissionlimit

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// review returns an AdmissionReview body as the API server writes it (the
// request's uid first), whose object holds a string of pad bytes.
func review(uid string, pad int) string {
	return `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"` + uid +
		`","kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"UPDATE","object":{"metadata":{"annotations":{"pad":"` +
		strings.Repeat("x", pad) + `"}}}}}`
}

// serve sends body to Limit(next) and returns the answer and whether next
// ran. chunked hides the length, as a client that streams would.
func serve(t *testing.T, body string, chunked bool, policy Policy) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	called := false
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		b, err := io.ReadAll(r.Body)
		if err != nil || string(b) != body {
			t.Errorf("next read %d bytes, %v; want the whole body", len(b), err)
		}
		w.WriteHeader(http.StatusOK)
	})
	req := httptest.NewRequest(http.MethodPost, "/mutate", strings.NewReader(body))
	if chunked {
		req.ContentLength = -1
	}
	rec := httptest.NewRecorder()
	Limit(next, 0, policy, "test webhook").ServeHTTP(rec, req)
	return rec, called
}

func TestLimit(t *testing.T) {
	cases := map[string]struct {
		body    string // the request body
		chunked bool   // the length is not sent
		policy  Policy // the webhook's policy
		next    bool   // whether the handler behind runs
		code    int    // HTTP status of the answer
		allowed bool   // the answer's allowed, when it is a review
		message string // part of the answer's warning or status message
	}{
		"a request within the bound reaches the handler":                 {body: review("u1", 1000), next: true, code: 200},
		"a streamed request within the bound reaches the handler":        {body: review("u1", 1000), chunked: true, next: true, code: 200},
		"a mutating webhook admits a request over the bound unchanged":   {body: review("u2", 3<<20), code: 200, allowed: true, message: "over the limit of 1048576 bytes; admitted unchanged"},
		"a streamed request over the bound is admitted too":              {body: review("u2", 3<<20), chunked: true, code: 200, allowed: true, message: "over 1048576 bytes"},
		"a validating webhook refuses a request over the bound":          {body: review("u3", 3<<20), policy: Deny, code: 200, message: "test webhook: the AdmissionReview is 3145"},
		"a request over the bound without a uid in its head is an error": {body: `{"pad":"` + strings.Repeat("x", 2<<20) + `"}`, code: http.StatusRequestEntityTooLarge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rec, called := serve(t, c.body, c.chunked, c.policy)
			if called != c.next || rec.Code != c.code {
				t.Fatalf("next ran: %v, code %d; want %v, %d (%s)", called, rec.Code, c.next, c.code, rec.Body.String())
			}
			if c.next || c.code != 200 {
				return
			}
			var ar admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &ar); err != nil || ar.Response == nil {
				t.Fatalf("answer %q is not an AdmissionReview: %v", rec.Body.String(), err)
			}
			if ar.APIVersion != "admission.k8s.io/v1" || ar.Kind != "AdmissionReview" {
				t.Errorf("answer is a %s %s", ar.APIVersion, ar.Kind)
			}
			if want := strings.Split(strings.Split(c.body, `"uid":"`)[1], `"`)[0]; string(ar.Response.UID) != want {
				t.Errorf("answer's uid = %q, want %q", ar.Response.UID, want)
			}
			if ar.Response.Allowed != c.allowed {
				t.Errorf("allowed = %v, want %v", ar.Response.Allowed, c.allowed)
			}
			msg := strings.Join(ar.Response.Warnings, " ")
			if ar.Response.Result != nil {
				msg += ar.Response.Result.Message
			}
			if !strings.Contains(msg, c.message) {
				t.Errorf("answer says %q, want %q in it", msg, c.message)
			}
		})
	}
}

// The third security review (M6): the webhook decoded and marshalled a
// review of up to 3 MiB four times before any size check. Over the bound,
// the answer now costs a bounded read of the head, whatever the size.
func TestLimit_RefusingAllocatesLittle(t *testing.T) {
	body := review("u", 3<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec, called := serve(t, body, false, Allow)
	runtime.ReadMemStats(&after)
	if called || rec.Code != 200 {
		t.Fatalf("next ran: %v, code %d", called, rec.Code)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 512<<10 {
		t.Errorf("answering a 3 MiB review allocated %d bytes, want under 512 KiB", grew)
	}
}
