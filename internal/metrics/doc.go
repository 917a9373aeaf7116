// Package metrics holds Reroll's own Prometheus metrics. Today that is the
// count of Kubernetes API requests by verb and resource: client-go's
// rest_client_requests_total only has the HTTP method, which cannot tell a
// LIST from a GET from a WATCH, nor a PATCH of a Deployment from a PATCH of
// an Event.
package metrics
