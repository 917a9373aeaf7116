// Package throttle limits the rate of Kubernetes API requests in the HTTP
// transport, the client-side limit of --kube-api-qps and --kube-api-burst.
//
// client-go limits each REST client with its own token bucket
// (rest.Config.QPS, Burst), taken in rest.(*Request).tryThrottleWithInfo.
// A request that waited there more than 50 ms also formats its URL for a
// V(3) log line whether or not V(3) is on, and builds the URL template of
// client-go's rate-limiter latency metric, which Reroll does not register:
// during a fan-out nearly every PATCH waits that long, and that bookkeeping
// cost 0.05 to 0.3 s of CPU a 2,000-Deployment fan-out in two profiles
// (issue #36), one to ten times the token bucket's own. A REST client built with QPS < 0 and no
// RateLimiter has no limiter and skips it all; Limits takes the tokens in
// the transport instead, with the same token bucket (golang.org/x/time/rate,
// which client-go's flowcontrol.NewTokenBucketRateLimiter wraps).
//
// The limit keeps its meaning: client-go gives each controller-runtime REST
// client (one per group, version and kind) and each typed clientset a bucket
// of its own, so PATCHes of Deployments and POSTs of Events never shared a
// budget. Limits keys its buckets by the API group, version and resource of
// the request path, which comes to the same: one bucket per resource, a
// subresource (deployments/status) sharing its resource's, and one for the
// paths that name no resource (discovery, /version). A watch takes one
// token when it starts, as in client-go; a request whose context is done
// while it waits fails with the context's error.
//
// A request that impersonates a user (the Impersonate-User header: a
// Projection's client, which acts as a ServiceAccount of the Projection's
// namespace) takes its tokens from buckets of that user's own, as the
// client of each ServiceAccount had a limiter of its own before: one
// tenant's Projections never spend the budget of Reroll's own requests or
// of another tenant's. MaxBuckets bounds them with the others.
package throttle
