package main

import (
	"testing"

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
