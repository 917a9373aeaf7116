package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookFlags are the flags of the mutating admission webhook, which keeps
// Reroll's fields on a workload that a replace rewrites (docs/gitops.md).
type webhookFlags struct {
	enabled           bool
	port              int
	certDir           string
	certSecret        string
	service           string
	namespace         string
	configurationName string
	// contentConfigurationName is the ValidatingWebhookConfiguration of
	// the content admission webhook; "" when none is installed.
	contentConfigurationName string
	// selfSignedCerts makes Reroll generate and rotate its certificates
	// (cert-controller); false serves whatever is in certDir.
	selfSignedCerts bool
	// extraDNSNames are added to the self-signed serving certificate.
	extraDNSNames []string
	// clientCA is a PEM file of the CAs whose client certificates the
	// webhook requires (--webhook-client-ca); "" accepts any client.
	clientCA string
	// clientCAs is clientCA loaded by validate.
	clientCAs *x509.CertPool
}

func addWebhookFlags(fs *pflag.FlagSet, f *webhookFlags) {
	fs.BoolVar(&f.enabled, "enable-webhook", false, "Serve the mutating admission webhook that keeps Reroll's fields on workloads that kubectl replace, Argo CD Replace=true or helm --force rewrite, and keep the label reroll.dev/managed on the workloads Reroll manages (see docs/gitops.md). With --enable-projections it also serves /mutate-projected, which keeps the fields Projections wrote on their targets (see docs/projections.md).")
	fs.IntVar(&f.port, "webhook-port", 9443, "Port of the admission webhook's HTTPS server.")
	fs.StringVar(&f.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory where the webhook's serving certificate (tls.crt, tls.key) is mounted from --webhook-cert-secret.")
	fs.StringVar(&f.certSecret, "webhook-cert-secret", "reroll-webhook-cert", "Secret, in --webhook-namespace, where Reroll keeps the webhook's self-signed CA and serving certificate and rotates them.")
	fs.StringVar(&f.service, "webhook-service", "reroll-webhook", "Service in front of the webhook; the serving certificate is for <service>.<namespace>.svc.")
	fs.StringVar(&f.namespace, "webhook-namespace", "", "Namespace of --webhook-service and --webhook-cert-secret (default POD_NAMESPACE).")
	fs.StringVar(&f.configurationName, "webhook-configuration-name", "reroll", "MutatingWebhookConfiguration (installed by the Helm chart or config/components/webhook) whose caBundle Reroll fills in.")
	fs.StringVar(&f.contentConfigurationName, "content-webhook-configuration-name", "", "ValidatingWebhookConfiguration of the content admission webhook (installed by the chart's validation.admission or config/components/content-webhook; docs/validation.md) whose caBundle Reroll fills in with its self-signed CA, as for --webhook-configuration-name. Empty: none is installed. The handler itself is served at /validate-content whenever --enable-webhook and --enable-validation are on.")
	fs.BoolVar(&f.selfSignedCerts, "webhook-self-signed-certs", true, "Generate the webhook's CA and serving certificate, keep them in --webhook-cert-secret, renew them 90 days before they expire and write the CA into the caBundle of --webhook-configuration-name. false: serve the certificate that something else (cert-manager) mounts at --webhook-cert-dir, reloaded when it changes; Reroll then touches neither the Secret nor the configuration.")
	fs.StringVar(&f.clientCA, "webhook-client-ca", "", "PEM file of the CA that signs the client certificate the API server presents to admission webhooks (its --admission-control-config-file kubeconfig); when set, the webhook answers only clients with a certificate it signed. Empty accepts any client (the webhook's answers hold nothing but what the request holds).")
	fs.StringSliceVar(&f.extraDNSNames, "webhook-extra-dns-names", nil, "More DNS names for the self-signed serving certificate, e.g. the host of a webhook configuration that reaches Reroll by url: instead of through --webhook-service.")
}

// validate returns the problems of the webhook flags and fills in the
// namespace from POD_NAMESPACE.
func (f *webhookFlags) validate(env func(string) string) []error {
	if !f.enabled {
		return nil
	}
	var errs []error
	if f.namespace == "" {
		f.namespace = env("POD_NAMESPACE")
	}
	if f.namespace == "" {
		errs = append(errs, errors.New("--enable-webhook: set --webhook-namespace or POD_NAMESPACE"))
	}
	if f.port <= 0 || f.port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port: %d is not a port", f.port))
	}
	required := map[string]string{"--webhook-cert-dir": f.certDir}
	if f.selfSignedCerts {
		required["--webhook-cert-secret"] = f.certSecret
		required["--webhook-service"] = f.service
		required["--webhook-configuration-name"] = f.configurationName
	}
	for _, n := range f.extraDNSNames {
		if problems := validation.IsDNS1123Subdomain(n); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("--webhook-extra-dns-names: %q is not a DNS name: %s", n, strings.Join(problems, "; ")))
		}
	}
	if f.clientCA != "" {
		pool, err := loadCAs(f.clientCA)
		if err != nil {
			errs = append(errs, fmt.Errorf("--webhook-client-ca: %w", err))
		}
		f.clientCAs = pool
	}
	for name, v := range required {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: a value is required with --enable-webhook", name))
		}
	}
	return errs
}

// server returns the manager's webhook server. With self-signed
// certificates it starts serving only once ready is closed (the certificate
// is on disk); ready is nil otherwise.
func (f *webhookFlags) server(ready <-chan struct{}) webhook.Server {
	// HTTP/1.1 only, as Kubernetes advises for admission webhooks since the
	// HTTP/2 rapid-reset and stream-flood issues (CVE-2023-44487,
	// CVE-2023-39325); controller-runtime offers h2 by default.
	o := webhook.Options{Port: f.port, CertDir: f.certDir, TLSOpts: []func(*tls.Config){http1Only}}
	if f.clientCAs != nil {
		o.TLSOpts = append(o.TLSOpts, requireClientCert(f.clientCAs))
	}
	s := webhook.NewServer(o)
	if ready == nil {
		return s
	}
	return &readyServer{Server: s, ready: ready}
}

// loadCAs reads a PEM file of CA certificates.
func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// http1Only offers only HTTP/1.1 in TLS's protocol negotiation.
func http1Only(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// requireClientCert makes the webhook's TLS server refuse every client
// without a certificate that one of cas signed: with the API server set up
// to present one, nothing else in the cluster can call the webhook.
func requireClientCert(cas *x509.CertPool) func(*tls.Config) {
	return func(c *tls.Config) {
		c.ClientCAs = cas
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
}

// addRotator makes Reroll keep a self-signed CA and a serving certificate
// for <service>.<namespace>.svc in the Secret, and the CA in the
// configuration's caBundle (cert-controller). The Secret reaches the
// webhook server as a volume mounted at --webhook-cert-dir; ready is closed
// once it is there.
func (f *webhookFlags) addRotator(mgr ctrl.Manager, ready chan struct{}) error {
	dnsName := fmt.Sprintf("%s.%s.svc", f.service, f.namespace)
	return rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: f.namespace, Name: f.certSecret},
		CertDir:        f.certDir,
		CAName:         "reroll-ca",
		CAOrganization: "reroll",
		DNSName:        dnsName,
		ExtraDNSNames:  append([]string{f.service, f.service + "." + f.namespace}, f.extraDNSNames...),
		IsReady:        ready,
		Webhooks:       f.configurations(),
		FieldOwner:     "reroll",
		// Every replica serves the webhook, so every replica must see the
		// certificate; writes to the Secret are guarded by resourceVersion.
		RequireLeaderElection: false,
	})
}

// configurations are the webhook configurations whose caBundle the
// rotation fills in: the mutating one, and the content admission webhook's
// validating one when it is installed.
func (f *webhookFlags) configurations() []rotator.WebhookInfo {
	out := []rotator.WebhookInfo{{Name: f.configurationName, Type: rotator.Mutating}}
	if f.contentConfigurationName != "" {
		out = append(out, rotator.WebhookInfo{Name: f.contentConfigurationName, Type: rotator.Validating})
	}
	return out
}

// readyServer delays the webhook server until its certificate exists: the
// server reads it when it starts and fails when it is missing.
type readyServer struct {
	webhook.Server
	ready <-chan struct{}
}

func (s *readyServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	return s.Server.Start(ctx)
}
