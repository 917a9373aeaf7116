package metricsauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestBearerToken_ReadsOnlyABearerToken(t *testing.T) {
	cases := map[string]struct {
		// header is the Authorization header's value.
		header string
		// want is the token read; "" when none.
		want string
	}{
		"a bearer token is read":                     {header: "Bearer abc.def", want: "abc.def"},
		"the scheme is read in any case":             {header: "bearer abc", want: "abc"},
		"spaces around the token are ignored":        {header: "  Bearer   abc  ", want: "abc"},
		"no header has no token":                     {header: ""},
		"Basic credentials are no token":             {header: "Basic YWxhZGRpbjpvcGVuc2VzYW1l"},
		"the scheme alone has no token":              {header: "Bearer"},
		"the scheme and spaces have no token":        {header: "Bearer   "},
		"two words after the scheme are no token":    {header: "Bearer abc def"},
		"a scheme that only starts right is refused": {header: "Bearerabc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := bearerToken(tc.header)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("bearerToken(%q) = %q, %v; want %q", tc.header, got, ok, tc.want)
			}
		})
	}
}

func TestIdentityOf_AuthenticatesOnlyANamedUserTheAPIServerAccepts(t *testing.T) {
	sa := authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus", UID: "u1",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"}}
	cases := map[string]struct {
		// status is the TokenReview's answer.
		status authenticationv1.TokenReviewStatus
		// authenticated is the identity's verdict.
		authenticated bool
		// groups are the identity's groups when authenticated.
		groups []string
	}{
		"a ServiceAccount token is its ServiceAccount, groups as answered": {
			status: authenticationv1.TokenReviewStatus{Authenticated: true, User: sa}, authenticated: true, groups: sa.Groups},
		"a user without system:authenticated gains it": {
			status:        authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}},
			authenticated: true, groups: []string{"dev", "system:authenticated"}},
		"a refused token is not authenticated": {
			status: authenticationv1.TokenReviewStatus{Authenticated: false, Error: "token has expired"}},
		"an accepted token without a user name is not authenticated": {
			status: authenticationv1.TokenReviewStatus{Authenticated: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			id := identityOf(tc.status)
			g.Expect(id.authenticated).To(gomega.Equal(tc.authenticated))
			g.Expect(id.problem).To(gomega.Equal(tc.status.Error))
			if tc.authenticated {
				g.Expect(id.user.Username).To(gomega.Equal(tc.status.User.Username))
				g.Expect(id.user.Groups).To(gomega.Equal(tc.groups))
			}
		})
	}
	// The answer's own group list is not changed under the cache.
	groups := []string{"dev"}
	identityOf(authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: groups}})
	if len(groups) != 1 {
		t.Fatalf("identityOf changed the review's groups: %v", groups)
	}
}

func TestAccessReview_AsksForTheNonResourceURLWithTheMethodAsVerb(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus", UID: "u1",
		Groups: []string{"system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}}}
	cases := map[string]struct {
		// method and path are the request's.
		method, path string
		// verb is the review's verb.
		verb string
	}{
		"GET /metrics asks for get":                {method: http.MethodGet, path: "/metrics", verb: "get"},
		"HEAD asks for head":                       {method: http.MethodHead, path: "/metrics", verb: "head"},
		"POST asks for post":                       {method: http.MethodPost, path: "/metrics", verb: "post"},
		"another path is asked as it is requested": {method: http.MethodGet, path: "/debug/pprof/", verb: "get"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			spec := accessReview(user, tc.method, tc.path)
			g.Expect(spec).To(gomega.Equal(authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, UID: "u1", Groups: user.Groups,
				Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: tc.path, Verb: tc.verb},
			}))
		})
	}
}

func TestDecisionOf_AllowsOnlyWhatTheAPIServerAllowsAndDoesNotDeny(t *testing.T) {
	cases := map[string]struct {
		// status is the SubjectAccessReview's answer.
		status authorizationv1.SubjectAccessReviewStatus
		// allowed is the decision.
		allowed bool
		// reason is the decision's reason.
		reason string
	}{
		"allowed is allowed": {status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by ClusterRoleBinding "reader"`},
			allowed: true, reason: `RBAC: allowed by ClusterRoleBinding "reader"`},
		"no opinion is not allowed":                 {status: authorizationv1.SubjectAccessReviewStatus{}},
		"denied is not allowed":                     {status: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}, reason: "no"},
		"allowed and denied at once is not allowed": {status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}},
		"an evaluation error is in the reason": {status: authorizationv1.SubjectAccessReviewStatus{Reason: "webhook", EvaluationError: "timeout"},
			reason: "webhook (evaluation error: timeout)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := decisionOf(tc.status)
			if d.allowed != tc.allowed || d.reason != tc.reason {
				t.Fatalf("decisionOf = %+v, want allowed %v reason %q", d, tc.allowed, tc.reason)
			}
		})
	}
}

func TestTransient_RetriesOnlyWhatMayPass(t *testing.T) {
	gr := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	cases := map[string]struct {
		// err is the review's error.
		err error
		// want: retry it.
		want bool
	}{
		"429 may pass":                      {err: apierrors.NewTooManyRequests("slow down", 1), want: true},
		"500 may pass":                      {err: apierrors.NewInternalError(errors.New("etcd")), want: true},
		"503 may pass":                      {err: apierrors.NewServiceUnavailable("starting"), want: true},
		"a server timeout may pass":         {err: apierrors.NewServerTimeout(gr, "create", 1), want: true},
		"a reset connection may pass":       {err: fmt.Errorf("post: %w", syscall.ECONNRESET), want: true},
		"an unexpected EOF may pass":        {err: fmt.Errorf("post: %w", io.ErrUnexpectedEOF), want: true},
		"403 (Reroll may not review) lasts": {err: apierrors.NewForbidden(gr, "", errors.New("rbac"))},
		"401 lasts":                         {err: apierrors.NewUnauthorized("who")},
		"400 lasts":                         {err: apierrors.NewBadRequest("bad")},
		"no error is not retried":           {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := transient(tc.err); got != tc.want {
				t.Fatalf("transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
