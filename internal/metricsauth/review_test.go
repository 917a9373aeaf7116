package metricsauth

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewRules are the rules of the chart's ClusterRole <fullname>-metrics-auth
// (charts/reroll/templates/rbac.yaml, metrics.auth=kubernetes): all that
// ReviewFilter needs.
var reviewRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// served is a metric of the registry the test's metrics server serves.
var served = prometheus.NewGauge(prometheus.GaugeOpts{Name: "reroll_metricsauth_test_served", Help: "Set to 1 by the metricsauth tests."})

func init() {
	ctrlmetrics.Registry.MustRegister(served)
	served.Set(1)
}

// reviewCounter counts the reviews a client sends, by resource
// ("tokenreviews", "subjectaccessreviews").
type reviewCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *reviewCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// take returns the counts since the last call and starts again from zero.
func (c *reviewCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// fixture is one namespace with the ServiceAccounts of a test.
type fixture struct {
	t  *testing.T
	ns string
}

// serviceAccount creates the ServiceAccount name, binds it to a new
// ClusterRole of rules (none: no binding), and returns a token of it.
func (f fixture) serviceAccount(name string, rules ...rbacv1.PolicyRule) string {
	t, g := f.t, newT(f.t)
	_, err := admin.CoreV1().ServiceAccounts(f.ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if len(rules) > 0 {
		role, err := admin.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: f.ns + "-" + name + "-"}, Rules: rules}, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
		binding, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: f.ns, Name: name}}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
		// The binding reaches the authorizer's cache in a moment: wait for
		// it here, so that the filter's first review is not answered (and
		// remembered) before it.
		user := "system:serviceaccount:" + f.ns + ":" + name
		g.Eventually(func(g gomega.Gomega) {
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: resourceOf(rules[0]), NonResourceAttributes: nonResourceOf(rules[0])}}, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(sar.Status.Allowed).To(gomega.BeTrue())
		}).Should(gomega.Succeed())
	}
	tok, err := admin.CoreV1().ServiceAccounts(f.ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return tok.Status.Token
}

// resourceOf and nonResourceOf are the attributes that rule grants first.
func resourceOf(rule rbacv1.PolicyRule) *authorizationv1.ResourceAttributes {
	if len(rule.Resources) == 0 {
		return nil
	}
	return &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0]}
}

func nonResourceOf(rule rbacv1.PolicyRule) *authorizationv1.NonResourceAttributes {
	if len(rule.NonResourceURLs) == 0 {
		return nil
	}
	return &authorizationv1.NonResourceAttributes{Path: rule.NonResourceURLs[0], Verb: rule.Verbs[0]}
}

// rerollClient returns the configuration and HTTP client of a user with
// token, as Reroll's manager hands them to a FilterProvider, the client's
// reviews counted.
func rerollClient(t *testing.T, token string) (*rest.Config, *http.Client, *reviewCounter) {
	cfg := rest.AnonymousClientConfig(plane.Config)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	counter := &reviewCounter{next: hc.Transport, n: map[string]int{}}
	hc.Transport = counter
	return cfg, hc, counter
}

// scrape GETs url with token ("": no Authorization header, "raw:<v>": that
// header value) and returns the status code and body.
func scrape(g gomega.Gomega, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if v, ok := strings.CutPrefix(token, "raw:"); ok {
		req.Header.Set("Authorization", v)
	} else if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The metrics server's certificate is self-signed, made at its start.
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own server
	resp, err := c.Do(req)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return resp.StatusCode, string(body)
}

// TestReviewFilter_ServesOnlyWhomTheAPIServerAuthorizes runs
// controller-runtime's metrics server over HTTPS with ReviewFilter, as
// --metrics-secure without --metrics-token-secret does, Reroll's reviews
// made with the chart's RBAC (metrics.auth=kubernetes): a ServiceAccount
// allowed to get /metrics reads the metrics; one without that permission
// gets 403, no token and a made-up token get 401, and repeated scrapes cost
// no API request once answered.
func TestReviewFilter_ServesOnlyWhomTheAPIServerAuthorizes(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := fixture{t: t, ns: newNamespace(t)}
	cfg, hc, reviews := rerollClient(t, f.serviceAccount("reroll", reviewRules...))
	scraper := f.serviceAccount("scraper", rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}})
	echoer := f.serviceAccount("echoer", rbacv1.PolicyRule{NonResourceURLs: []string{"/echo"}, Verbs: []string{"get"}})
	stranger := f.serviceAccount("stranger")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	srv, err := metricsserver.NewServer(metricsserver.Options{
		BindAddress: addr, SecureServing: true, FilterProvider: ReviewFilter,
		// /echo answers the Authorization header its handler sees.
		ExtraHandlers: map[string]http.Handler{"/echo": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "authorization="+r.Header.Get("Authorization"))
		})},
	}, cfg, hc)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	metrics := "https://" + addr + "/metrics"

	// Positive control: the scraper reads the metrics, at the cost of one
	// TokenReview and one SubjectAccessReview.
	g.Eventually(func(g gomega.Gomega) {
		code, body := scrape(g, metrics, scraper)
		g.Expect(code).To(gomega.Equal(http.StatusOK), body)
		g.Expect(body).To(gomega.ContainSubstring("reroll_metricsauth_test_served 1"))
	}).Should(gomega.Succeed())
	g.Expect(reviews.take()).To(gomega.Equal(map[string]int{"tokenreviews": 1, "subjectaccessreviews": 1}))
	// Scraped again and again (every 15 s for a minute), it costs nothing.
	for range 4 {
		code, _ := scrape(g, metrics, scraper)
		g.Expect(code).To(gomega.Equal(http.StatusOK))
	}
	g.Expect(reviews.take()).To(gomega.BeEmpty())

	for name, tc := range map[string]struct {
		// url and token are scraped.
		url, token string
		// code is the answer's; reviews are the reviews it costs the first
		// time (none the second).
		code    int
		reviews map[string]int
		// body is in the answer.
		body string
	}{
		"a ServiceAccount without the permission gets 403": {url: metrics, token: stranger, code: http.StatusForbidden,
			reviews: map[string]int{"tokenreviews": 1, "subjectaccessreviews": 1}, body: `user "system:serviceaccount:` + f.ns + `:stranger" may not get the non-resource URL /metrics`},
		"the scraper on another path gets 403": {url: "https://" + addr + "/echo", token: scraper, code: http.StatusForbidden,
			reviews: map[string]int{"subjectaccessreviews": 1}, body: "may not get the non-resource URL /echo"},
		"no token gets 401":         {url: metrics, code: http.StatusUnauthorized, reviews: map[string]int{}, body: "Unauthorized"},
		"Basic credentials get 401": {url: metrics, token: "raw:Basic c2NyYXBlcjpzY3JhcGVy", code: http.StatusUnauthorized, reviews: map[string]int{}, body: "Unauthorized"},
		"a made-up token gets 401":  {url: metrics, token: "not-a-token", code: http.StatusUnauthorized, reviews: map[string]int{"tokenreviews": 1}, body: "Unauthorized"},
		"a token of another signer gets 401": {url: metrics, token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDpkZWZhdWx0In0.c2lnbmF0dXJl",
			code: http.StatusUnauthorized, reviews: map[string]int{"tokenreviews": 1}, body: "Unauthorized"},
	} {
		for try := range 2 {
			code, body := scrape(g, tc.url, tc.token)
			g.Expect(code).To(gomega.Equal(tc.code), "%s, try %d: %s", name, try, body)
			g.Expect(body).To(gomega.ContainSubstring(tc.body), name)
			g.Expect(body).NotTo(gomega.ContainSubstring("reroll_metricsauth_test_served"), name)
			want := tc.reviews
			if try > 0 {
				want = map[string]int{}
			}
			g.Expect(reviews.take()).To(gomega.Equal(want), "%s, try %d", name, try)
		}
	}

	// A handler behind the filter never sees the credentials.
	code, body := scrape(g, "https://"+addr+"/echo", echoer)
	g.Expect(code).To(gomega.Equal(http.StatusOK), body)
	g.Expect(body).To(gomega.Equal("authorization="))
}

// TestReviewFilter_AsksAgainOnceAnAnswerExpires: an identity is kept for
// TokenTTL, an allowed access for AllowTTL, a refused one for DenyTTL; a
// Reroll that may not create reviews answers 500 and serves nothing.
func TestReviewFilter_AsksAgainOnceAnAnswerExpires(t *testing.T) {
	t.Parallel()
	g := newT(t)
	f := fixture{t: t, ns: newNamespace(t)}
	_, hc, reviews := rerollClient(t, f.serviceAccount("reroll", reviewRules...))
	scraper := f.serviceAccount("scraper", rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}})
	stranger := f.serviceAccount("stranger")
	cs, err := kubernetes.NewForConfigAndClient(rest.AnonymousClientConfig(plane.Config), hc)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	clock := clocktesting.NewFakeClock(time.Now())
	rv, err := newReviewer(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), clock)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	h, err := rv.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "reroll_up 1\n") }))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	steps := []struct {
		// after is the time since the first request.
		after time.Duration
		// token is the scraper's or the stranger's.
		token string
		// code and reviews are the answer and what it cost.
		code    int
		reviews map[string]int
	}{
		{after: 0, token: scraper, code: http.StatusOK, reviews: map[string]int{"tokenreviews": 1, "subjectaccessreviews": 1}},
		{after: 0, token: stranger, code: http.StatusForbidden, reviews: map[string]int{"tokenreviews": 1, "subjectaccessreviews": 1}},
		{after: DenyTTL - time.Second, token: stranger, code: http.StatusForbidden, reviews: map[string]int{}},
		{after: DenyTTL + time.Second, token: stranger, code: http.StatusForbidden, reviews: map[string]int{"subjectaccessreviews": 1}},
		{after: TokenTTL - time.Second, token: scraper, code: http.StatusOK, reviews: map[string]int{}},
		{after: TokenTTL + time.Second, token: scraper, code: http.StatusOK, reviews: map[string]int{"tokenreviews": 1}},
		{after: AllowTTL - time.Second, token: scraper, code: http.StatusOK, reviews: map[string]int{"tokenreviews": 1}},
		{after: AllowTTL + time.Second, token: scraper, code: http.StatusOK, reviews: map[string]int{"subjectaccessreviews": 1}},
	}
	start := clock.Now()
	for i, s := range steps {
		clock.SetTime(start.Add(s.after))
		code, body := scrape(g, srv.URL+"/metrics", s.token)
		g.Expect(code).To(gomega.Equal(s.code), "step %d: %s", i, body)
		g.Expect(reviews.take()).To(gomega.Equal(s.reviews), "step %d", i)
	}

	// Without create on tokenreviews, nothing is served and nothing cached.
	_, hc, _ = rerollClient(t, f.serviceAccount("unprivileged"))
	cs, err = kubernetes.NewForConfigAndClient(rest.AnonymousClientConfig(plane.Config), hc)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rv, err = newReviewer(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	h, err = rv.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "reroll_up 1\n") }))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	unprivileged := httptest.NewServer(h)
	t.Cleanup(unprivileged.Close)
	code, body := scrape(g, unprivileged.URL+"/metrics", scraper)
	g.Expect(code).To(gomega.Equal(http.StatusInternalServerError), body)
	g.Expect(body).NotTo(gomega.ContainSubstring("reroll_up"))
	g.Expect(rv.identities.Keys()).To(gomega.BeEmpty())
}
