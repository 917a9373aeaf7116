package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// The third review (Low): an InvalidAnnotation Event quotes the tenant's
// annotation, and `kubectl reroll status` printed it as it was: escape
// sequences in it reached the operator's terminal (moving the cursor,
// rewriting what was shown, setting the window title).
func TestStatusReport_WritesNoTerminalEscapes(t *testing.T) {
	g := gomega.NewWithT(t)
	hostile := "Ignoring reroll.dev/rollout-window: \x1b]0;owned\x07\x1b[2J\x1b[Hall clear\r\u009b31m"
	r := statusReport{RerollNamespace: "reroll-system", MetricsProblem: "not asked",
		InvalidAnnotations: []workloadEvent{{Workload: "Deployment/tenant/web", Message: hostile, Time: time.Now()}},
		LastError:          &workloadEvent{Workload: "Deployment/tenant/web", Message: hostile, Time: time.Now()},
		Notes:              []string{hostile}}
	var out bytes.Buffer
	g.Expect(r.write(&out)).To(gomega.Succeed())
	g.Expect(out.String()).To(gomega.ContainSubstring(`Ignoring reroll.dev/rollout-window: \x1b]0;owned\a\x1b[2J\x1b[Hall clear\r\u009b31m`), "shown, escaped")
	for _, b := range []byte{0x1b, 0x07, '\r'} {
		g.Expect(out.Bytes()).NotTo(gomega.ContainElement(b), "no control byte %#x reaches the terminal", b)
	}
	g.Expect(out.String()).NotTo(gomega.ContainSubstring("\u009b"), "no C1 control reaches the terminal")
}
