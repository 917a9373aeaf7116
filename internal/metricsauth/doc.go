// Package metricsauth protects Reroll's /metrics with a bearer token that
// Reroll keeps in a Secret of its own namespace, so that a namespace-scoped
// installation, which may hold no cluster-scoped object, still serves its
// metrics to authorized scrapers only. The other way, controller-runtime's
// filters.WithAuthenticationAndAuthorization, asks the API server
// (TokenReview, SubjectAccessReview), which needs a ClusterRole.
//
// A scraper reads the token from the Secret (the Prometheus Operator's
// authorization.credentials of a ServiceMonitor or PodMonitor) and sends it
// as "Authorization: Bearer <token>".
package metricsauth
