package metricsauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long ReviewFilter trusts an answer of the API server: the figures of
// controller-runtime's filters.WithAuthenticationAndAuthorization, which
// this filter replaces. A scraper every 15 s thus costs one TokenReview a
// minute and one SubjectAccessReview every five minutes; a revoked token or
// a removed binding still reads /metrics for at most that long.
const (
	// TokenTTL is how long a TokenReview's answer, accepted or refused, is
	// kept; failed reviews (no answer) are not kept.
	TokenTTL = time.Minute
	// AllowTTL is how long a SubjectAccessReview that allowed is kept.
	AllowTTL = 5 * time.Minute
	// DenyTTL is how long a SubjectAccessReview that did not allow is kept.
	DenyTTL = 30 * time.Second
)

// reviewTimeout bounds one review, its retries included, as the API
// server's own delegated authentication does (10 s).
const reviewTimeout = 10 * time.Second

// cacheEntries bounds each of the two caches (identities and decisions):
// the least recently used entry goes first, so a flood of made-up tokens
// costs API requests but never memory beyond this.
const cacheEntries = 1024

// reviewBackoff retries a review that failed for a reason that may pass
// (the API server overloaded, a connection reset): five tries over about
// four seconds, as controller-runtime's filter and the API server's
// delegated authentication and authorization do.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// ReviewFilter is a metrics server FilterProvider (metricsserver.Options)
// that serves a request only to a client the API server authenticates and
// authorizes, using config and httpClient (the manager's):
//
//   - the request's "Authorization: Bearer <token>" is sent in a TokenReview
//     (authentication.k8s.io/v1, no audiences: the token must be valid for
//     the API server itself, as a ServiceAccount token is); no bearer token,
//     or one the API server does not accept, gets 401 Unauthorized;
//   - the user the review names is checked with a SubjectAccessReview
//     (authorization.k8s.io/v1) for the non-resource URL of the request's
//     path and the lower-cased HTTP method as verb (GET is "get", as the API
//     server maps it); a user not allowed gets 403 Forbidden;
//   - a review that fails (the API server unreachable, or Reroll not
//     allowed to create reviews) gets 500 and a log line;
//   - the Authorization header is removed before the metrics handler runs.
//
// Answers are kept for TokenTTL, AllowTTL and DenyTTL in bounded caches,
// keyed by an HMAC-SHA256 of the token under a key drawn at start (the
// token itself is never kept, nor logged). Reroll needs create on
// tokenreviews and subjectaccessreviews (cluster-scoped); a scraper needs
// get on the non-resource URL /metrics. It does what controller-runtime's
// filters.WithAuthenticationAndAuthorization does with client-go alone,
// without linking k8s.io/apiserver, gRPC and OpenTelemetry (15.5 MB of the
// release binary, 55.7 → 40.2 MB), and answers 401, not 500, to a token the
// API server refuses.
func ReviewFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationv1client.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("making the TokenReview client: %w", err)
	}
	authz, err := authorizationv1client.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("making the SubjectAccessReview client: %w", err)
	}
	rv, err := newReviewer(authn.TokenReviews(), authz.SubjectAccessReviews(), nil)
	if err != nil {
		return nil, err
	}
	return rv.filter, nil
}

// reviewer asks the API server who a token is and what it may do, and
// remembers the answers for a while.
type reviewer struct {
	tokens authenticationv1client.TokenReviewInterface
	access authorizationv1client.SubjectAccessReviewInterface
	// hashKey keys the HMAC-SHA256 that names a token in identities; drawn
	// at start, so a cache key says nothing about a token outside the
	// process.
	hashKey []byte
	// identities maps the HMAC of a token to its identity.
	identities *cache.LRUExpireCache
	// decisions maps the SHA-256 of a SubjectAccessReviewSpec's JSON to its
	// decision.
	decisions *cache.LRUExpireCache
}

// identity is the answer of a TokenReview.
type identity struct {
	// authenticated is the review's status.authenticated.
	authenticated bool
	// user is the review's status.user.
	user authenticationv1.UserInfo
	// problem is the review's status.error, for the log.
	problem string
}

// decision is the answer of a SubjectAccessReview.
type decision struct {
	// allowed: the review allowed and did not deny.
	allowed bool
	// reason is the review's status.reason (and evaluationError), for the log.
	reason string
}

// newReviewer returns a reviewer using tokens and access; clock, when not
// nil, is the caches' clock (tests move it).
func newReviewer(tokens authenticationv1client.TokenReviewInterface, access authorizationv1client.SubjectAccessReviewInterface, clock cache.Clock) (*reviewer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("drawing the metrics token cache key: %w", err)
	}
	rv := &reviewer{tokens: tokens, access: access, hashKey: key}
	if clock == nil {
		rv.identities, rv.decisions = cache.NewLRUExpireCache(cacheEntries), cache.NewLRUExpireCache(cacheEntries)
	} else {
		rv.identities, rv.decisions = cache.NewLRUExpireCacheWithClock(cacheEntries, clock), cache.NewLRUExpireCacheWithClock(cacheEntries, clock)
	}
	return rv, nil
}

// filter is the metricsserver.Filter of ReviewFilter.
func (rv *reviewer) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			log.V(1).Info("Refused a metrics request without a bearer token", "remote", r.RemoteAddr)
			unauthorized(w)
			return
		}
		id, err := rv.authenticate(r.Context(), token)
		if err != nil {
			log.Error(err, "Could not authenticate a metrics request", "remote", r.RemoteAddr)
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !id.authenticated {
			log.V(1).Info("Refused a metrics request whose token the API server does not accept", "remote", r.RemoteAddr, "reason", id.problem)
			unauthorized(w)
			return
		}
		spec := accessReview(id.user, r.Method, r.URL.Path)
		d, err := rv.authorize(r.Context(), spec)
		if err != nil {
			log.Error(err, "Could not authorize a metrics request", "user", spec.User, "verb", spec.NonResourceAttributes.Verb, "path", spec.NonResourceAttributes.Path)
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !d.allowed {
			log.V(1).Info("Refused a metrics request of a user not allowed", "user", spec.User, "verb", spec.NonResourceAttributes.Verb, "path", spec.NonResourceAttributes.Path, "reason", d.reason)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s the non-resource URL %s", spec.User, spec.NonResourceAttributes.Verb, spec.NonResourceAttributes.Path), http.StatusForbidden)
			return
		}
		// The metrics handler has no use for the credentials.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	}), nil
}

// unauthorized answers 401 with the challenge of RFC 6750.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="reroll-metrics"`)
	http.Error(w, "Unauthorized", http.StatusUnauthorized)
}

// authenticate returns the identity of token, from the cache or from one
// TokenReview; an error means the API server gave no answer.
func (rv *reviewer) authenticate(ctx context.Context, token string) (identity, error) {
	mac := hmac.New(sha256.New, rv.hashKey)
	mac.Write([]byte(token))
	var key [sha256.Size]byte
	mac.Sum(key[:0])
	if v, ok := rv.identities.Get(key); ok {
		return v.(identity), nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var answer *authenticationv1.TokenReview
	err := rv.review(ctx, func(ctx context.Context) (err error) {
		answer, err = rv.tokens.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return identity{}, fmt.Errorf("creating a TokenReview: %w", err)
	}
	id := identityOf(answer.Status)
	rv.identities.Add(key, id, TokenTTL)
	return id, nil
}

// authorize returns the decision on spec, from the cache or from one
// SubjectAccessReview; an error means the API server gave no answer.
func (rv *reviewer) authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (decision, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return decision{}, fmt.Errorf("encoding a SubjectAccessReview: %w", err)
	}
	key := sha256.Sum256(raw)
	if v, ok := rv.decisions.Get(key); ok {
		return v.(decision), nil
	}
	review := &authorizationv1.SubjectAccessReview{Spec: spec}
	var answer *authorizationv1.SubjectAccessReview
	err = rv.review(ctx, func(ctx context.Context) (err error) {
		answer, err = rv.access.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return decision{}, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	d := decisionOf(answer.Status)
	ttl := DenyTTL
	if d.allowed {
		ttl = AllowTTL
	}
	rv.decisions.Add(key, d, ttl)
	return d, nil
}

// review runs create within reviewTimeout, retrying with reviewBackoff
// while the error may pass.
func (rv *reviewer) review(ctx context.Context, create func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	return retry.OnError(reviewBackoff, func(err error) bool { return ctx.Err() == nil && transient(err) }, func() error {
		return create(ctx)
	})
}

// transient tells whether a failed review may succeed if tried again: the
// API server overloaded, restarting or timing out (429, 500, 503, 504), or
// the connection lost. A refusal (401, 403, 400) is not transient.
func transient(err error) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return true
	case utilnet.IsConnectionReset(err), utilnet.IsConnectionRefused(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= http.StatusInternalServerError
}

// bearerToken returns the token of an Authorization header value of the
// form "Bearer <token>" (the scheme in any case, as RFC 7235 allows; spaces
// around the token ignored) and true; false for no header, another scheme,
// an empty token or more than one word after the scheme.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// identityOf reads the answer of a TokenReview: authenticated only when the
// API server says so and names a user; the user gains the group
// system:authenticated when the answer lacks it, as the API server's own
// authentication adds it.
func identityOf(status authenticationv1.TokenReviewStatus) identity {
	id := identity{authenticated: status.Authenticated && status.User.Username != "", user: status.User, problem: status.Error}
	if !id.authenticated {
		return identity{problem: status.Error}
	}
	if !slices.Contains(id.user.Groups, "system:authenticated") && !slices.Contains(id.user.Groups, "system:unauthenticated") {
		id.user.Groups = append(slices.Clone(id.user.Groups), "system:authenticated")
	}
	return id
}

// accessReview is the SubjectAccessReviewSpec that asks whether user may
// request path with the HTTP method: a non-resource URL, the verb the
// method in lower case (GET is "get"), as the API server authorizes a
// request for a non-resource URL.
func accessReview(user authenticationv1.UserInfo, method, path string) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: strings.ToLower(method)},
	}
	if len(user.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return spec
}

// decisionOf reads the answer of a SubjectAccessReview: allowed only when the
// API server allows and does not deny.
func decisionOf(status authorizationv1.SubjectAccessReviewStatus) decision {
	reason := status.Reason
	if status.EvaluationError != "" {
		reason = strings.TrimSpace(reason + " (evaluation error: " + status.EvaluationError + ")")
	}
	return decision{allowed: status.Allowed && !status.Denied, reason: reason}
}
