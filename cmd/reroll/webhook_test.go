package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
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
