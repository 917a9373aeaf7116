package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// kubeconfig writes a kubeconfig for an API server that is never called and
// returns its path.
func kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	gomega.NewWithT(t).Expect(os.WriteFile(path, []byte(cfg), 0o600)).To(gomega.Succeed())
	return path
}

// TestKubeAPIRateLimit checks --kube-api-qps and --kube-api-burst where they
// take effect: the rate limiter of the clients built from Reroll's rest
// config.
func TestKubeAPIRateLimit(t *testing.T) {
	cases := map[string]struct {
		// args are the rate flags given, beside --kubeconfig.
		args []string
		// qps and burst are what the clients are limited to.
		qps   float32
		burst int
	}{
		// Positive control: a kubeconfig alone gives client-go's 5 and 10
		// (rest.DefaultQPS, rest.DefaultBurst); Reroll's defaults replace them.
		"defaults":  {qps: 50, burst: 300},
		"flags set": {args: []string{"--kube-api-qps=7.5", "--kube-api-burst=9"}, qps: 7.5, burst: 9},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			f, err := parse(t, nil, append([]string{"--kubeconfig=" + kubeconfig(t)}, tc.args...)...)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			loaded, err := restConfig(f.kubeconfig)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect([]any{loaded.QPS, loaded.Burst}).To(gomega.Equal([]any{float32(0), 0}),
				"the kubeconfig alone leaves client-go's defaults (%v, %d)", rest.DefaultQPS, rest.DefaultBurst)

			cfg, err := f.restConfig()
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(cfg.QPS).To(gomega.Equal(tc.qps))
			g.Expect(cfg.Burst).To(gomega.Equal(tc.burst))
			// The limit the clients Reroll builds from it apply.
			cs, err := kubernetes.NewForConfig(cfg)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(cs.CoreV1().RESTClient().GetRateLimiter().QPS()).To(gomega.Equal(tc.qps))
		})
	}
}

func TestKubeAPIRateLimit_RejectsNonPositiveValues(t *testing.T) {
	cases := map[string]struct {
		// args are the command line.
		args []string
	}{
		"zero qps":       {args: []string{"--kube-api-qps=0"}},
		"negative qps":   {args: []string{"--kube-api-qps=-1"}},
		"zero burst":     {args: []string{"--kube-api-burst=0"}},
		"negative burst": {args: []string{"--kube-api-burst=-5"}},
	}
	// Positive control: positive values are accepted.
	_, err := parse(t, nil, "--kube-api-qps=0.5", "--kube-api-burst=1")
	gomega.NewWithT(t).Expect(err).NotTo(gomega.HaveOccurred())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, nil, tc.args...)
			gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--kube-api-qps and --kube-api-burst must be positive")))
		})
	}
}
