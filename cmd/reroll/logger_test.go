package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/controller"
)

// The security review counted 313 "Rolled workload" lines for 500 rollouts:
// the production logger samples repeated lines. Every audit line is
// written; other repeated lines are still sampled.
func TestNewLogger_WritesEveryAuditLine(t *testing.T) {
	g := gomega.NewWithT(t)
	var out bytes.Buffer
	log, err := newLoggerTo(&out, "json", "info")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	const n = 500
	for i := range n {
		log.Info("Reconciling", "i", i)
		log.Info(controller.AuditMessages[0], "i", i)
		log.WithValues("controller", "deployment").Info(controller.AuditMessages[4], "i", i)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	count := func(msg string) int {
		c := 0
		for _, l := range lines {
			if strings.Contains(l, `"msg":"`+msg+`"`) {
				c++
			}
		}
		return c
	}
	// Positive control: sampling is on, and drops repeated ordinary lines.
	g.Expect(count("Reconciling")).To(gomega.BeNumerically("<", n))
	g.Expect(count("Reconciling")).To(gomega.BeNumerically(">=", 100))
	g.Expect(count(controller.AuditMessages[0])).To(gomega.Equal(n))
	g.Expect(count(controller.AuditMessages[4])).To(gomega.Equal(n))
}
