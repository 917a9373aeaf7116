package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"testing"

	"github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/controller"
)

func TestStatus_ShowsLeaderMetricsAndInvalidAnnotations(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A free port for the metrics endpoint.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(gomega.Succeed())
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1"}),
		deployment(ns, "typo", map[string]string{"reroll.dev/auto": "yes please"}, pod(container(envFromConfigMap("cfg")))),
	)
	startReroll(t, ns, controller.Options{}, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = "reroll-leader"
		o.LeaderElectionNamespace = ns
		o.LeaderElectionReleaseOnCancel = true
		o.Metrics = metricsserver.Options{BindAddress: addr}
	})

	var r statusReport
	g.Eventually(func() []workloadEvent {
		out, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", fmt.Sprintf("http://someone:secret@%s/metrics", addr), "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(out).NotTo(gomega.ContainSubstring("secret@"))
		r = statusReport{}
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r.InvalidAnnotations
	}).Should(gomega.HaveLen(1))
	g.Expect(r.InvalidAnnotations[0].Workload).To(gomega.Equal("Deployment " + ns + "/typo"))
	g.Expect(r.InvalidAnnotations[0].Message).To(gomega.ContainSubstring(`annotation reroll.dev/auto: value "yes please" is not a boolean`))
	g.Expect(r.Leader).NotTo(gomega.BeNil())
	g.Expect(r.Leader.Holder).NotTo(gomega.BeEmpty())
	g.Expect(r.Metrics).NotTo(gomega.BeNil())
	g.Expect(r.Metrics.Source).To(gomega.Equal(fmt.Sprintf("http://someone:xxxxx@%s/metrics", addr)))
	g.Expect(r.MetricsProblem).To(gomega.BeEmpty())

	// -o name: the workloads that need attention, as kubectl names them.
	names, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", "http://"+addr+"/metrics", "-o", "name")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(names).To(gomega.Equal("deployment.apps/typo\n"))

	table, err := kubectlReroll(t, "-n", ns, "status", "--reroll-namespace", ns, "--metrics-url", "http://"+addr+"/metrics")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("Leader:      " + r.Leader.Holder))
	g.Expect(table).To(gomega.MatchRegexp(`queue depth \d+, reconcile errors \d+`))
	g.Expect(table).To(gomega.ContainSubstring("Deployment " + ns + "/typo"))
}
