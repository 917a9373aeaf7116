// Package metricsauth protects Reroll's /metrics with a bearer token that
// Reroll keeps in a Secret of its own namespace, so that a namespace-scoped
// installation, which may hold no cluster-scoped object, still serves its
// metrics to authorized scrapers only (Filter). The other way, ReviewFilter,
// asks the API server who a scraper is and whether it may read the path
// (TokenReview, SubjectAccessReview), which needs a ClusterRole; it does
// what controller-runtime's filters.WithAuthenticationAndAuthorization does
// with client-go alone, so that the binary does not link k8s.io/apiserver.
//
// A scraper reads the token from the Secret (the Prometheus Operator's
// authorization.credentials of a ServiceMonitor or PodMonitor) and sends it
// as "Authorization: Bearer <token>".
package metricsauth
