//go:build e2e

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

// TestBinary_StartsWithReloadersChartArguments runs the built binary with
// arguments as Stakater Reloader's chart renders them (quotes included),
// Reloader's flags that Reroll adds (--enable-pprof, --enable-csi-integration)
// and a flag of an older Reloader release that Reroll does not implement: it
// starts, serves pprof, warns about the older flag, and rolls only in the
// namespaces the quoted selector picks. Its metrics are plain HTTP, as
// Reloader serves them, so Reloader's scrapers keep working (they got HTTP 400
// from an HTTPS port that asked for a token and RBAC Reloader never had).
func TestBinary_StartsWithReloadersChartArguments(t *testing.T) {
	t.Parallel()
	g := newT(t)
	selected := newNamespace(t, "e2e-reloader-args-", map[string]string{"e2e-reloader-args": "on"})
	pprofAddr := freeAddr(t)
	// As shipped: Reloader's arguments, no metrics flag but the local bind
	// address.
	p := startRerollAsShipped(t, plane.Kubeconfig, []string{
		`--namespace-selector="e2e-reloader-args=on"`,
		"--log-level=debug", "--log-format=json",
		"--enable-pprof", "--pprof-addr=" + pprofAddr,
		"--enable-csi-integration=true",
		"--reload-on-create=true", "--reload-on-delete=true", "--sync-after-restart=true",
		"--auto-reload-all=true",
		"--configmap-auto-by-annotation=example.com/auto-by",
		// A pod knows its namespace (POD_NAMESPACE, or the ServiceAccount
		// token's); this process outside a pod is told it.
	}, map[string]string{"POD_NAMESPACE": selected})

	g.Eventually(func() (int, error) {
		resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}).Should(gomega.Equal(http.StatusOK))
	g.Eventually(p.log.String).Should(gomega.ContainSubstring(`"flag":"--configmap-auto-by-annotation"`))
	var warning string
	for _, line := range strings.Split(p.log.String(), "\n") {
		if strings.Contains(line, "--configmap-auto-by-annotation") {
			warning = line
		}
	}
	g.Expect(warning).To(gomega.ContainSubstring(`"level":"warn"`))

	createWorkload(t, selected)
	expectCoreBehaviour(t, p, selected)
	g.Expect(p.scrape(t)).To(gomega.HaveKey("reroll_rollouts_total"), "plain HTTP, no token")
}
