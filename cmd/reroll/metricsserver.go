package main

import (
	"crypto/tls"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsFlags choose how /metrics is served.
type metricsFlags struct {
	// secure serves HTTPS and lets only clients the API server
	// authenticates (TokenReview) and authorizes for GET on the
	// non-resource URL /metrics (SubjectAccessReview) read it, as
	// kubebuilder's default does; false serves plain HTTP to anyone, as
	// Reloader does.
	secure bool
	// certDir holds tls.crt and tls.key for secure serving; empty makes
	// controller-runtime generate a self-signed certificate at start.
	certDir string
}

func addMetricsFlags(fs *pflag.FlagSet, f *metricsFlags) {
	fs.BoolVar(&f.secure, "metrics-secure", true, "Serve /metrics over HTTPS to clients that the API server authenticates and authorizes for GET on /metrics (needs create on tokenreviews and subjectaccessreviews); false serves plain HTTP to anyone, as Reloader does.")
	fs.StringVar(&f.certDir, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key for --metrics-secure; empty generates a self-signed certificate at start.")
}

// serverOptions are the manager's metrics server options for address addr.
func (f metricsFlags) serverOptions(addr string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if !f.secure {
		return o
	}
	o.SecureServing = true
	o.CertDir = f.certDir
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/1.1 only, as for the admission webhook.
	o.TLSOpts = []func(*tls.Config){http1Only}
	return o
}
