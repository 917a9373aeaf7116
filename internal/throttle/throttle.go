package throttle

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/time/rate"
	clienttransport "k8s.io/client-go/transport"
	"k8s.io/utils/clock"
)

// MaxBuckets bounds the buckets a Limits holds. Reroll talks to a few dozen
// resources; paths of more (Projections may target any kind) first forget
// the buckets that are full again, which a new bucket would equal, then share
// one overflow bucket.
const MaxBuckets = 128

// Limits is a token bucket of QPS requests per second, refilled up to Burst,
// per API group, version and resource of the request path and per user a
// request impersonates (none for Reroll's own). It is safe for
// concurrent use; one Limits is shared by every transport it wraps, so that
// two clients of the same resource share its bucket.
type Limits struct {
	limit rate.Limit
	burst int
	clock clock.Clock

	mu       sync.Mutex
	buckets  map[resource]*rate.Limiter
	overflow *rate.Limiter
}

// New returns the limits of qps requests per second (averaged) and burst
// requests at once, per resource. qps and burst must be positive (the
// flags are validated so); a burst below 1 would admit no request.
func New(qps float32, burst int) *Limits {
	return newWithClock(qps, burst, clock.RealClock{})
}

// newWithClock is New on clk.
func newWithClock(qps float32, burst int, clk clock.Clock) *Limits {
	return &Limits{limit: rate.Limit(qps), burst: burst, clock: clk, buckets: map[resource]*rate.Limiter{},
		overflow: rate.NewLimiter(rate.Limit(qps), burst)}
}

// Wrap returns rt behind the limits; it fits rest.Config.Wrap. Every
// request waits for a token of its resource's bucket before it is sent; one
// whose context is done first is not sent and fails with an error wrapping
// the context's (context.Canceled or context.DeadlineExceeded), as
// client-go's limiter does, and its token goes back to the bucket.
func (l *Limits) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{limits: l, next: rt}
}

// transport is one wrapped http.RoundTripper.
type transport struct {
	limits *Limits
	next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := resourceOf(req.URL.Path)
	// client-go's impersonating wrapper is outside rest.Config.Wrap's: the
	// header is set by the time the request gets here.
	r.user = req.Header.Get(clienttransport.ImpersonateUserHeader)
	if err := t.limits.wait(req.Context(), t.limits.bucket(r)); err != nil {
		// client-go's wording (rest.(*Request).tryThrottleWithInfo), for
		// whoever searches logs for it.
		return nil, fmt.Errorf("client rate limiter Wait returned an error: %w", err)
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper returns the transport underneath, as client-go's own
// wrappers do (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// wait takes a token from b, waiting on l's clock until there is one or
// ctx is done. It is rate.Limiter.Wait on l.clock, without Wait's early
// failure when the wait would outlast ctx's deadline: the request fails with
// the context's error when the deadline comes.
func (l *Limits) wait(ctx context.Context, b *rate.Limiter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := l.clock.Now()
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("a burst of %d admits no request", l.burst)
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	timer := l.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-ctx.Done():
		r.CancelAt(l.clock.Now())
		return ctx.Err()
	}
}

// bucket returns the bucket of r, made on first use.
func (l *Limits) bucket(r resource) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[r]; ok {
		return b
	}
	if len(l.buckets) >= MaxBuckets {
		now := l.clock.Now()
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		if len(l.buckets) >= MaxBuckets {
			return l.overflow
		}
	}
	// The path's bytes stay referenced by the key; strings.Clone keeps the
	// request's URL from being held for the life of the bucket.
	r = resource{group: strings.Clone(r.group), version: strings.Clone(r.version), name: strings.Clone(r.name), user: strings.Clone(r.user)}
	b := rate.NewLimiter(l.limit, l.burst)
	l.buckets[r] = b
	return b
}

// len is how many buckets l holds, the overflow bucket aside.
func (l *Limits) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// resource is the API group, version and plural resource name a request
// path names (all empty for a path that names none), and the user the
// request impersonates (empty for none).
type resource struct {
	group, version, name string
	user                 string
}

// resourceOf returns the resource of an API request path as the API
// server's request info reads it: /api/<version>/... (the core group) and
// /apis/<group>/<version>/..., then an optional namespaces/<namespace>/, then
// the resource; a subresource (deployments/<name>/status) counts as its
// resource, and namespaces/<name>[/status|/finalize] as namespaces. The
// deprecated /watch/ prefix is skipped. Discovery (/api, /apis/<group>,
// /api/v1) and other paths (/version, /openapi/v3) name no resource. The
// strings returned are substrings of path.
func resourceOf(path string) resource {
	rest := strings.TrimPrefix(path, "/")
	next := func() string {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		return seg
	}
	var r resource
	switch next() {
	case "api":
		r.version = next()
	case "apis":
		r.group, r.version = next(), next()
	default:
		return resource{}
	}
	name := next()
	if name == "watch" {
		name = next()
	}
	if name == "namespaces" {
		if ns, sub := next(), next(); ns != "" && sub != "" && sub != "status" && sub != "finalize" {
			name = sub
		}
	}
	if r.version == "" || name == "" {
		return resource{}
	}
	r.name = name
	return r
}
