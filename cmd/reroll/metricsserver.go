package main

import (
	"crypto/tls"
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/spf13/pflag"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/metricsauth"
)

// metricsFlags choose how /metrics is served.
type metricsFlags struct {
	// secure serves HTTPS and lets only clients the API server
	// authenticates (TokenReview) and authorizes for GET on the
	// non-resource URL /metrics (SubjectAccessReview) read it, as
	// kubebuilder's default does (metricsauth.ReviewFilter), or only clients with the token of
	// tokenSecret; false (the default) serves plain HTTP to anyone, as
	// Reloader does, so that Reloader's arguments keep Reloader's metrics.
	secure bool
	// tokenSecret, when set, names the Secret in Reroll's own namespace
	// whose bearer token secure serving accepts instead of asking the API
	// server: no cluster-scoped permission is needed.
	tokenSecret string
	// certDir holds tls.crt and tls.key for secure serving; empty makes
	// controller-runtime generate a self-signed certificate at start.
	certDir string
}

func addMetricsFlags(fs *pflag.FlagSet, f *metricsFlags) {
	fs.BoolVar(&f.secure, "metrics-secure", false, "Serve /metrics over HTTPS to authorized clients only: with --metrics-token-secret, those sending its token; without, those the API server authenticates and authorizes for GET on /metrics (needs create on tokenreviews and subjectaccessreviews, cluster-scoped). false serves plain HTTP to anyone, as Reloader does (its default, so that Reloader's arguments serve Reloader's metrics); the chart and config/ turn it on.")
	fs.StringVar(&f.tokenSecret, "metrics-token-secret", "", "With --metrics-secure: Secret, in --digest-key-namespace, whose key \"token\" is the one bearer token /metrics accepts, instead of asking the API server (no cluster-scoped permission); Reroll creates it with a random token when absent and reads it at start.")
	fs.StringVar(&f.certDir, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key for --metrics-secure; empty generates a self-signed certificate at start.")
}

// serverOptions are the manager's metrics server options for address addr;
// token is the bearer token read from tokenSecret (nil without it).
func (f metricsFlags) serverOptions(addr string, token []byte) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if !f.secure {
		return o
	}
	o.SecureServing = true
	o.CertDir = f.certDir
	o.FilterProvider = metricsauth.ReviewFilter
	if token != nil {
		o.FilterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
			return metricsauth.Filter(token), nil
		}
	}
	// HTTP/1.1 only, as for the admission webhook.
	o.TLSOpts = []func(*tls.Config){http1Only}
	return o
}
