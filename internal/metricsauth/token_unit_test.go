package metricsauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
)

func TestFilter_PassesOnlyTheToken(t *testing.T) {
	token := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	cases := map[string]struct {
		// header is the Authorization header sent; "" sends none.
		header string
		// want is the status code answered.
		want int
	}{
		"the token as a bearer token is served":     {header: "Bearer " + string(token), want: http.StatusOK},
		"no Authorization header is refused":        {want: http.StatusUnauthorized},
		"another token is refused":                  {header: "Bearer 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee", want: http.StatusUnauthorized},
		"a prefix of the token is refused":          {header: "Bearer " + string(token[:32]), want: http.StatusUnauthorized},
		"the token with a longer tail is refused":   {header: "Bearer " + string(token) + "0", want: http.StatusUnauthorized},
		"the token as Basic credentials is refused": {header: "Basic " + string(token), want: http.StatusUnauthorized},
		"an empty bearer token is refused":          {header: "Bearer ", want: http.StatusUnauthorized},
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "reroll_up 1\n") })
	h, err := Filter(token)(logr.Discard(), next)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			served := w.Body.String() == "reroll_up 1\n"
			if served != (tc.want == http.StatusOK) {
				t.Fatalf("metrics served: %v, body %q", served, w.Body.String())
			}
		})
	}
}
