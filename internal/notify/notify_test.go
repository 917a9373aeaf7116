package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/change"
)

func TestClient_Post(t *testing.T) {
	g := gomega.NewWithT(t)
	var got change.Change
	var contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contentType = r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
	}))
	defer srv.Close()
	p := change.Change{Kind: "Deployment", Namespace: "ns", Name: "web", Hash: "h", Objects: []change.Object{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}, Hash: "s"}}}
	g.Expect((&Client{URL: srv.URL}).Post(t.Context(), p)).To(gomega.Succeed())
	g.Expect(got).To(gomega.Equal(p))
	g.Expect(contentType).To(gomega.Equal("application/json"))
}

func TestClient_PostFailsOnServerError(t *testing.T) {
	g := gomega.NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer srv.Close()
	err := (&Client{URL: srv.URL}).Post(t.Context(), change.Change{})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("502")))
}
