package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestOptions_WebhookOffByDefault(t *testing.T) {
	g := gomega.NewWithT(t)
	var f flags
	g.Expect(newFlagSet(&f).Parse(nil)).To(gomega.Succeed())
	o, err := f.options(func(string) string { return "" })
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(o.Admission.Enabled).To(gomega.BeFalse())
}

func TestOptions_WebhookNamespaceFromPodNamespace(t *testing.T) {
	g := gomega.NewWithT(t)
	f, err := parse(t, map[string]string{"POD_NAMESPACE": "reroll-system"}, "--enable-webhook")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.webhook.namespace).To(gomega.Equal("reroll-system"))
	g.Expect(f.webhook.port).To(gomega.Equal(9443))
	g.Expect(f.webhook.configurationName).To(gomega.Equal("reroll"))
}

func TestOptions_WebhookRejectsMissingNamespaceAndBadPort(t *testing.T) {
	g := gomega.NewWithT(t)
	_, err := parse(t, nil, "--enable-webhook", "--webhook-port=70000")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--webhook-namespace or POD_NAMESPACE")))
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--webhook-port: 70000")))
}

func TestOptions_WebhookWithCertificatesFromElsewhere(t *testing.T) {
	g := gomega.NewWithT(t)
	f, err := parse(t, map[string]string{"POD_NAMESPACE": "reroll-system"}, "--enable-webhook", "--webhook-self-signed-certs=false",
		"--webhook-cert-secret=", "--webhook-service=", "--webhook-configuration-name=")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "without self-signed certificates Reroll needs no Secret, Service or configuration name")
	g.Expect(f.webhook.selfSignedCerts).To(gomega.BeFalse())
	_, isReady := f.webhook.server(nil).(*readyServer)
	g.Expect(isReady).To(gomega.BeFalse(), "the server starts at once on the mounted certificate")

	_, err = parse(t, map[string]string{"POD_NAMESPACE": "reroll-system"}, "--enable-webhook", "--webhook-cert-secret=")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--webhook-cert-secret: a value is required")))
}

func TestOptions_WebhookExtraDNSNames(t *testing.T) {
	g := gomega.NewWithT(t)
	f, err := parse(t, map[string]string{"POD_NAMESPACE": "ns"}, "--enable-webhook", "--webhook-extra-dns-names=localhost,reroll.example.com")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.webhook.extraDNSNames).To(gomega.Equal([]string{"localhost", "reroll.example.com"}))

	_, err = parse(t, map[string]string{"POD_NAMESPACE": "ns"}, "--enable-webhook", "--webhook-extra-dns-names=Not_A_Name")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`--webhook-extra-dns-names: "Not_A_Name" is not a DNS name`)))
}

func TestWebhookClientCA_RefusesClientsWithoutItsCertificate(t *testing.T) {
	g := gomega.NewWithT(t)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "api-server-client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)).To(gomega.Succeed())
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	clientDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}, ca, &clientKey.PublicKey, caKey)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	f, err := parse(t, map[string]string{"POD_NAMESPACE": "ns"}, "--enable-webhook", "--webhook-client-ca="+caFile)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	requireClientCert(f.webhook.clientCAs)(srv.TLS)
	srv.StartTLS()
	defer srv.Close()

	anonymous := srv.Client()
	_, err = anonymous.Get(srv.URL)
	g.Expect(err).To(gomega.HaveOccurred(), "a client without a certificate is refused")

	withCert := srv.Client()
	withCert.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}}
	resp, err := withCert.Get(srv.URL)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(resp.Body.Close()).To(gomega.Succeed())
	g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK))

	_, err = parse(t, map[string]string{"POD_NAMESPACE": "ns"}, "--enable-webhook", "--webhook-client-ca="+filepath.Join(t.TempDir(), "missing"))
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--webhook-client-ca: reading the CA bundle")))
}

// selfSignedCertDir writes a self-signed serving certificate for 127.0.0.1
// as tls.crt and tls.key in a new directory, as the webhook server reads it.
func selfSignedCertDir(t *testing.T) string {
	t.Helper()
	g := gomega.NewWithT(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(gomega.Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(gomega.Succeed())
	return dir
}

// negotiated starts s and returns the protocol it agrees on with a client
// that offers HTTP/2 first, as Go's and the API server's clients do.
func negotiated(t *testing.T, s webhook.Server, port int) string {
	t.Helper()
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var proto string
	g.Eventually(func() error {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // the test's own self-signed certificate
			NextProtos:         []string{"h2", "http/1.1"},
		})
		if err != nil {
			return err
		}
		proto = conn.ConnectionState().NegotiatedProtocol
		return conn.Close()
	}, 10*time.Second, 50*time.Millisecond).Should(gomega.Succeed())
	return proto
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	gomega.NewWithT(t).Expect(err).NotTo(gomega.HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestWebhookServer_ServesHTTP1Only(t *testing.T) {
	g := gomega.NewWithT(t)
	dir := selfSignedCertDir(t)
	// Positive control: controller-runtime's server, as is, agrees on HTTP/2.
	port := freePort(t)
	g.Expect(negotiated(t, webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}), port)).To(gomega.Equal("h2"))

	f, err := parse(t, map[string]string{"POD_NAMESPACE": "ns"}, "--enable-webhook", "--webhook-cert-dir="+dir)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	f.webhook.port = freePort(t)
	s := f.webhook.server(nil).(*webhook.DefaultServer)
	s.Options.Host = "127.0.0.1"
	g.Expect(negotiated(t, s, f.webhook.port)).To(gomega.Equal("http/1.1"))
}
