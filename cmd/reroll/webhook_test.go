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
