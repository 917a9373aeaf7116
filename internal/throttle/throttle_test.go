package throttle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	clienttransport "k8s.io/client-go/transport"
	clocktesting "k8s.io/utils/clock/testing"
)

// server counts the requests that reach it, by path.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	n    atomic.Int64
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		s.n.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

// reached is how many requests reached s.
func (s *server) reached() int64 { return s.n.Load() }

// client returns an HTTP client whose transport is wrapped by l.
func (s *server) client(l *Limits) *http.Client {
	return &http.Client{Transport: l.Wrap(http.DefaultTransport)}
}

// do sends method to s's path through c with ctx and returns the error.
func (s *server) do(ctx context.Context, c *http.Client, method, path string) error {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// async sends the request in a goroutine; the channel gets its error.
func (s *server) async(ctx context.Context, c *http.Client, method, path string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.do(ctx, c, method, path) }()
	return done
}

const (
	deployment       = "/apis/apps/v1/namespaces/a/deployments/d"
	deploymentStatus = "/apis/apps/v1/namespaces/b/deployments/e/status"
	deploymentsWatch = "/apis/apps/v1/deployments?watch=true&resourceVersion=1"
	events           = "/api/v1/namespaces/a/events"
)

// TestLimits_BurstThenRefill: a bucket of burst 3 at 10 per second admits
// three requests at once (a watch among them: it takes one token when it
// starts), holds the fourth until 100 ms later, and not a moment before.
func TestLimits_BurstThenRefill(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	c := s.client(newWithClock(10, 3, clk))
	ctx := t.Context()

	// The burst: every request of the deployments resource, whatever its
	// namespace, name, subresource or verb.
	for _, r := range [][2]string{{http.MethodPatch, deployment}, {http.MethodGet, deploymentsWatch}, {http.MethodPut, deploymentStatus}} {
		g.Eventually(s.async(ctx, c, r[0], r[1])).Should(gomega.Receive(gomega.Succeed()), r[1])
	}
	g.Expect(s.reached()).To(gomega.Equal(int64(3)))

	fourth := s.async(ctx, c, http.MethodPatch, deployment)
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue(), "the fourth request waits for a token")
	clk.Step(99 * time.Millisecond)
	g.Consistently(fourth, 100*time.Millisecond).ShouldNot(gomega.Receive(), "99 ms refill less than a token")
	g.Expect(s.reached()).To(gomega.Equal(int64(3)))
	clk.Step(time.Millisecond)
	g.Eventually(fourth).Should(gomega.Receive(gomega.Succeed()))
	g.Expect(s.reached()).To(gomega.Equal(int64(4)))

	// The bucket is empty again: the next one waits as long.
	fifth := s.async(ctx, c, http.MethodPatch, deployment)
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue())
	g.Consistently(fifth, 50*time.Millisecond).ShouldNot(gomega.Receive())
	clk.Step(100 * time.Millisecond)
	g.Eventually(fifth).Should(gomega.Receive(gomega.Succeed()))
}

// TestLimits_ResourcesHaveTheirOwnBuckets: with the Deployments' bucket
// empty, an Event POST, a Deployment of another API version and a
// ConfigMap are sent at once; another Deployment PATCH waits.
func TestLimits_ResourcesHaveTheirOwnBuckets(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	l := newWithClock(1, 1, clk)
	// A second client on the same Limits: controller-runtime's client and
	// cache, the Events clientset and the store each build their own.
	c, other := s.client(l), s.client(l)
	ctx := t.Context()

	g.Expect(s.do(ctx, c, http.MethodPatch, deployment)).To(gomega.Succeed())
	// Positive control: the Deployments' bucket is empty, for every client.
	waiting := s.async(ctx, other, http.MethodPatch, deploymentStatus)
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue())
	g.Consistently(waiting, 50*time.Millisecond).ShouldNot(gomega.Receive())

	for _, path := range []string{events, "/apis/events.k8s.io/v1/namespaces/a/events", "/apis/apps/v1beta2/namespaces/a/deployments/d", "/api/v1/namespaces/a/configmaps/c", "/api/v1/namespaces/a", "/version"} {
		g.Eventually(s.async(ctx, c, http.MethodPost, path)).Should(gomega.Receive(gomega.Succeed()), path)
	}
	g.Expect(s.reached()).To(gomega.Equal(int64(7)))
	clk.Step(time.Second)
	g.Eventually(waiting).Should(gomega.Receive(gomega.Succeed()))
}

// TestLimits_ContextDoneWhileWaiting: a request whose context is cancelled
// while it waits is not sent and fails with context.Canceled; its token
// goes back, so the next request waits only until the first refill.
func TestLimits_ContextDoneWhileWaiting(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	c := s.client(newWithClock(10, 1, clk))

	g.Expect(s.do(t.Context(), c, http.MethodPatch, deployment)).To(gomega.Succeed())
	ctx, cancel := context.WithCancel(t.Context())
	waiting := s.async(ctx, c, http.MethodPatch, deployment)
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue())
	g.Consistently(waiting, 50*time.Millisecond).ShouldNot(gomega.Receive(), "positive control: it waits")
	cancel()
	var err error
	g.Eventually(waiting).Should(gomega.Receive(&err))
	g.Expect(err).To(gomega.MatchError(context.Canceled))
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("client rate limiter Wait returned an error")))
	g.Expect(s.reached()).To(gomega.Equal(int64(1)), "the cancelled request is not sent")

	// A context already done fails before taking a token.
	g.Expect(s.do(ctx, c, http.MethodPatch, deployment)).To(gomega.MatchError(context.Canceled))

	clk.Step(100 * time.Millisecond)
	next := s.async(t.Context(), c, http.MethodPatch, deployment)
	g.Eventually(next).Should(gomega.Receive(gomega.Succeed()), "the cancelled request's token went back")
	g.Expect(s.reached()).To(gomega.Equal(int64(2)))
}

// TestLimits_Bounded: past MaxBuckets resources, full buckets are
// forgotten (a new one would be the same); past MaxBuckets busy ones, the
// rest share one overflow bucket.
func TestLimits_Bounded(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	l := newWithClock(1, 1, clk)
	c := s.client(l)
	ctx := t.Context()
	crd := func(i int) string { return fmt.Sprintf("/apis/example.com/v1/namespaces/a/kind%ds/x", i) }

	for i := range MaxBuckets {
		g.Eventually(s.async(ctx, c, http.MethodGet, crd(i))).Should(gomega.Receive(gomega.Succeed()))
	}
	g.Expect(l.len()).To(gomega.Equal(MaxBuckets))
	// Every bucket is empty: two more resources share the overflow.
	g.Eventually(s.async(ctx, c, http.MethodGet, crd(MaxBuckets))).Should(gomega.Receive(gomega.Succeed()))
	waiting := s.async(ctx, c, http.MethodGet, crd(MaxBuckets+1))
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue())
	g.Consistently(waiting, 50*time.Millisecond).ShouldNot(gomega.Receive())
	g.Expect(l.len()).To(gomega.Equal(MaxBuckets))
	clk.Step(time.Second)
	g.Eventually(waiting).Should(gomega.Receive(gomega.Succeed()))

	// A second later every bucket is full again: a new resource forgets them.
	clk.Step(time.Second)
	g.Eventually(s.async(ctx, c, http.MethodGet, crd(MaxBuckets+2))).Should(gomega.Receive(gomega.Succeed()))
	g.Expect(l.len()).To(gomega.Equal(1))
}

func TestResourceOf(t *testing.T) {
	cases := map[string]struct {
		// path is the request's URL path.
		path string
		// want is "group/version/resource", "//" for none.
		want string
	}{
		"core, namespaced":          {path: "/api/v1/namespaces/a/configmaps/c", want: "/v1/configmaps"},
		"core, list all namespaces": {path: "/api/v1/secrets", want: "/v1/secrets"},
		"group, namespaced":         {path: "/apis/apps/v1/namespaces/a/deployments/d", want: "apps/v1/deployments"},
		"subresource":               {path: "/apis/apps/v1/namespaces/a/deployments/d/status", want: "apps/v1/deployments"},
		"cluster-scoped, named":     {path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", want: "apiextensions.k8s.io/v1/customresourcedefinitions"},
		"collection of namespace":   {path: "/api/v1/namespaces/a/events", want: "/v1/events"},
		"namespaces":                {path: "/api/v1/namespaces", want: "/v1/namespaces"},
		"a namespace":               {path: "/api/v1/namespaces/a", want: "/v1/namespaces"},
		"a namespace's status":      {path: "/api/v1/namespaces/a/status", want: "/v1/namespaces"},
		"a namespace's finalize":    {path: "/api/v1/namespaces/a/finalize", want: "/v1/namespaces"},
		"deprecated watch prefix":   {path: "/api/v1/watch/namespaces/a/pods", want: "/v1/pods"},
		"trailing slash":            {path: "/apis/coordination.k8s.io/v1/namespaces/a/leases/", want: "coordination.k8s.io/v1/leases"},
		"discovery, core":           {path: "/api", want: "//"},
		"discovery, core version":   {path: "/api/v1", want: "//"},
		"discovery, groups":         {path: "/apis", want: "//"},
		"discovery, group":          {path: "/apis/apps", want: "//"},
		"discovery, group version":  {path: "/apis/apps/v1", want: "//"},
		"version":                   {path: "/version", want: "//"},
		"openapi":                   {path: "/openapi/v3/apis/apps/v1", want: "//"},
		"empty":                     {path: "", want: "//"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := resourceOf(tc.path)
			if got := strings.Join([]string{r.group, r.version, r.name}, "/"); got != tc.want {
				t.Errorf("resourceOf(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// TestLimits_RealClock: New's limits wait on the wall clock, and a
// deadline that passes while a request waits fails it with
// context.DeadlineExceeded.
func TestLimits_RealClock(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	c := s.client(New(0.5, 1))
	g.Expect(s.do(t.Context(), c, http.MethodGet, deployment)).To(gomega.Succeed())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.do(ctx, c, http.MethodGet, deployment)
	g.Expect(err).To(gomega.MatchError(context.DeadlineExceeded))
	g.Expect(time.Since(start)).To(gomega.BeNumerically(">=", 100*time.Millisecond), "it waited until the deadline")
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(gomega.BeTrue())
	g.Expect(s.reached()).To(gomega.Equal(int64(1)))
}

// TestLimits_ImpersonatedUsersHaveTheirOwnBuckets: with Reroll's own
// ConfigMaps bucket empty, a request of the same resource impersonating a
// ServiceAccount (a Projection's client) is sent at once, and so is one of
// another ServiceAccount; a second one of the first ServiceAccount waits,
// and so does Reroll's own.
func TestLimits_ImpersonatedUsersHaveTheirOwnBuckets(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	ctx := t.Context()
	const cm = "/api/v1/namespaces/a/configmaps/c"
	l := newWithClock(1, 1, clk)
	// send PATCHes the ConfigMap as user (none: Reroll's own request),
	// through client-go's impersonating wrapper outside the limits, in the
	// order rest.Config puts them (transport.HTTPWrappersForConfig).
	send := func(user string) <-chan error {
		c := s.client(l)
		if user != "" {
			c.Transport = clienttransport.NewImpersonatingRoundTripper(clienttransport.ImpersonationConfig{UserName: user}, c.Transport)
		}
		return s.async(ctx, c, http.MethodPatch, cm)
	}
	g.Eventually(send("")).Should(gomega.Receive(gomega.Succeed()))
	// Positive control: Reroll's own bucket is empty.
	own := send("")
	g.Eventually(clk.HasWaiters).Should(gomega.BeTrue())
	g.Consistently(own, 50*time.Millisecond).ShouldNot(gomega.Receive())

	g.Eventually(send("system:serviceaccount:a:one")).Should(gomega.Receive(gomega.Succeed()), "a tenant's own bucket")
	g.Eventually(send("system:serviceaccount:b:two")).Should(gomega.Receive(gomega.Succeed()), "another tenant's own bucket")
	g.Expect(s.reached()).To(gomega.Equal(int64(3)))
	again := send("system:serviceaccount:a:one")
	g.Consistently(again, 50*time.Millisecond).ShouldNot(gomega.Receive(), "the tenant's bucket is empty now")
	g.Expect(s.reached()).To(gomega.Equal(int64(3)))

	clk.Step(time.Second)
	g.Eventually(own).Should(gomega.Receive(gomega.Succeed()))
	g.Eventually(again).Should(gomega.Receive(gomega.Succeed()))
}
