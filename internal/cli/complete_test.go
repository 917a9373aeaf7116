package cli

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

func TestComplete_KindNameAndNamespaces(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t,
		configMap(ns, "app-config", nil, map[string]string{"a": "1"}),
		deployment(ns, "web", nil, pod(container())),
		deployment(ns, "worker", nil, pod(container())),
	)
	// complete runs `kubectl reroll __complete args...`, what
	// kubectl_complete-reroll runs, and returns the candidates (the lines
	// before cobra's ":<directive>" line).
	complete := func(args ...string) []string {
		out, err := kubectlReroll(t, append([]string{"__complete"}, args...)...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	g.Expect(complete("-n", ns, "why", "dep")).To(gomega.Equal([]string{"deployment/", "deploymentconfig/"}))
	g.Expect(complete("-n", ns, "why", "deployment/")).To(gomega.Equal([]string{"deployment/web", "deployment/worker"}))
	g.Expect(complete("-n", ns, "why", "deployment/wo")).To(gomega.Equal([]string{"deployment/worker"}))
	g.Expect(complete("-n", ns, "who-uses", "")).To(gomega.Equal([]string{"configmap/", "secret/"}))
	g.Expect(complete("-n", ns, "who-uses", "configmap/")).To(gomega.Equal([]string{"configmap/app-config", "configmap/kube-root-ca.crt"}))
	g.Expect(complete("why", "-n", ns[:len(ns)-2])).To(gomega.ContainElement(ns))
}
