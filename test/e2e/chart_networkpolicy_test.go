//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The third review (#32, Low): the NetworkPolicy was off by default. It is
// on: with the default values Reroll's pods accept connections on the
// metrics port only and connect to the API server's ports only; with
// alerts or a notification endpoint they may also resolve names (DNS);
// networkPolicy.enabled=false still renders none.
func TestHelmChart_NetworkPolicyOnByDefault(t *testing.T) {
	t.Parallel()
	g := newT(t)
	egressPorts := func(np networkingv1.NetworkPolicy) []string {
		var out []string
		for _, r := range np.Spec.Egress {
			g.Expect(r.To).To(gomega.BeEmpty(), "egress by port, to any destination")
			for _, p := range r.Ports {
				out = append(out, string(*p.Protocol)+"/"+p.Port.String())
			}
		}
		return out
	}
	policy := func(values map[string]any) networkingv1.NetworkPolicy {
		nps := only(renderChart(t, values), "NetworkPolicy")
		g.Expect(nps).To(gomega.HaveLen(1))
		return *convert[networkingv1.NetworkPolicy](t, nps[0])
	}

	np := policy(nil)
	g.Expect(np.Spec.PolicyTypes).To(gomega.ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	g.Expect(np.Spec.Ingress).To(gomega.HaveLen(1))
	g.Expect(np.Spec.Ingress[0].Ports).To(gomega.ConsistOf(networkingv1.NetworkPolicyPort{
		Port: &intstr.IntOrString{Type: intstr.String, StrVal: "metrics"}, Protocol: ptr.To(corev1.ProtocolTCP)}))
	g.Expect(egressPorts(np)).To(gomega.ConsistOf("TCP/443", "TCP/6443"))

	for name, values := range map[string]map[string]any{
		"alerts":              {"alerts.enabled": true, "alerts.urlSecret.name": "alert-url"},
		"webhookUrl":          {"webhookUrl": "https://hooks.example/reroll"},
		"webhookUrl a Secret": {"webhookUrlSecret.name": "hook-url"},
	} {
		g.Expect(egressPorts(policy(values))).To(gomega.ConsistOf("TCP/443", "TCP/6443", "UDP/53", "TCP/53"), name)
	}

	g.Expect(only(renderChart(t, map[string]any{"networkPolicy.enabled": false}), "NetworkPolicy")).To(gomega.BeEmpty())
}
