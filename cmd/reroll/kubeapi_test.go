package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kubeconfig writes a kubeconfig for an API server at server (plain HTTP)
// and returns its path.
func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	gomega.NewWithT(t).Expect(os.WriteFile(path, []byte(cfg), 0o600)).To(gomega.Succeed())
	return path
}

// apiServer answers every GET of /api/v1/namespaces/<ns>/<resource>/<name>
// with an empty object of that resource's kind, and counts what it got.
type apiServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	s := &apiServer{hits: map[string]int{}}
	kinds := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/")
		s.mu.Lock()
		s.hits[parts[len(parts)-2]]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":%q,"metadata":{"name":%q}}`, kinds[parts[len(parts)-2]], parts[len(parts)-1])
	}))
	t.Cleanup(s.Close)
	return s
}

// got is how many requests of resource reached s.
func (s *apiServer) got(resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[resource]
}

// TestKubeAPIRateLimit_InTheTransport checks --kube-api-qps and
// --kube-api-burst where they take effect: the clients Reroll builds from
// its rest config (client-go's clientsets, controller-runtime's per-kind
// REST clients, discovery) carry no client-go rate limiter, which would
// cost its logging and metrics bookkeeping on every wait (issue #36), and
// the transport they share admits a burst per resource, then holds the
// next request of that resource, whichever client sends it.
func TestKubeAPIRateLimit_InTheTransport(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newAPIServer(t)
	f, err := parse(t, nil, "--kubeconfig="+kubeconfig(t, s.URL), "--kube-api-qps=0.01", "--kube-api-burst=2")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var counted int
	var mu sync.Mutex
	count := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			counted++
			mu.Unlock()
			return rt.RoundTrip(req)
		})
	}
	cfg, err := f.restConfig(count)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	// No client-go limiter, in any client built from cfg.
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(cs.CoreV1().RESTClient().GetRateLimiter()).To(gomega.BeNil())
	g.Expect(cs.AppsV1().RESTClient().GetRateLimiter()).To(gomega.BeNil())
	plain := rest.CopyConfig(cfg)
	plain.GroupVersion, plain.APIPath, plain.NegotiatedSerializer = &schema.GroupVersion{Version: "v1"}, "/api", scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(plain)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(rc.GetRateLimiter()).To(gomega.BeNil())
	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	crc, err := apiutil.RESTClientForGVK(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, false, false, cfg, scheme.Codecs, httpClient)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(crc.GetRateLimiter()).To(gomega.BeNil())
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(dc.RESTClient().GetRateLimiter()).To(gomega.BeNil())

	// The transport limits: a burst of 2 ConfigMap GETs, then the third
	// waits (0.01 per second: 100 s), from another client as well.
	for _, name := range []string{"a", "b"} {
		_, err := cs.CoreV1().ConfigMaps("n").Get(t.Context(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	other, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = other.CoreV1().ConfigMaps("n").Get(ctx, "c", metav1.GetOptions{})
	g.Expect(err).To(gomega.MatchError(context.DeadlineExceeded))
	g.Expect(time.Since(start)).To(gomega.BeNumerically(">=", 200*time.Millisecond), "it waited for a token")
	g.Expect(s.got("configmaps")).To(gomega.Equal(2))
	// Another resource has its own bucket.
	for _, name := range []string{"a", "b"} {
		_, err := other.CoreV1().Secrets("n").Get(t.Context(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	g.Expect(s.got("secrets")).To(gomega.Equal(2))
	// The wrappers sit inside the limit: they saw the requests sent only.
	mu.Lock()
	defer mu.Unlock()
	g.Expect(counted).To(gomega.Equal(4))
}

// roundTripperFunc is a func as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKubeAPIRateLimit_Flags: a kubeconfig alone leaves client-go's 5 per
// second (rest.DefaultQPS); Reroll's restConfig turns client-go's limiter
// off whatever the flags, which the transport's limit replaces.
func TestKubeAPIRateLimit_Flags(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newAPIServer(t)
	f, err := parse(t, nil, "--kubeconfig="+kubeconfig(t, s.URL))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect([]any{f.kubeAPIQPS, f.kubeAPIBurst}).To(gomega.Equal([]any{float32(50), 300}))
	loaded, err := restConfig(f.kubeconfig)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// Positive control: without Reroll's settings, client-go limits.
	cs, err := kubernetes.NewForConfig(loaded)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(cs.CoreV1().RESTClient().GetRateLimiter().QPS()).To(gomega.Equal(rest.DefaultQPS))

	cfg, err := f.restConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect([]any{cfg.QPS, cfg.RateLimiter}).To(gomega.Equal([]any{float32(-1), nil}))
	g.Expect(cfg.WrapTransport).NotTo(gomega.BeNil())
}
func TestKubeAPIRateLimit_RejectsNonPositiveValues(t *testing.T) {
	cases := map[string]struct {
		// args are the command line.
		args []string
	}{
		"zero qps":       {args: []string{"--kube-api-qps=0"}},
		"negative qps":   {args: []string{"--kube-api-qps=-1"}},
		"zero burst":     {args: []string{"--kube-api-burst=0"}},
		"negative burst": {args: []string{"--kube-api-burst=-5"}},
	}
	// Positive control: positive values are accepted.
	_, err := parse(t, nil, "--kube-api-qps=0.5", "--kube-api-burst=1")
	gomega.NewWithT(t).Expect(err).NotTo(gomega.HaveOccurred())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, nil, tc.args...)
			gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--kube-api-qps and --kube-api-burst must be positive")))
		})
	}
}
