package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWorkloadReconciler_EveryRolloutLeavesOneAuditLine: the security
// review counted 313 "Rolled workload" lines for 500 rollouts and 26
// Rolled Events for 56 rollouts. The controller logs AuditRolled once per
// rollout (cmd/reroll's logger never samples it:
// TestNewLogger_WritesEveryAuditLine), while Events with equal notes are
// aggregated by client-go's recorder into one Event with a count
// (docs/security.md, "Audit trail").
func TestWorkloadReconciler_EveryRolloutLeavesOneAuditLine(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	rr := startReroll(t, ns, Options{})
	recorded(t, d)

	const n = 5
	for i := 1; i <= n; i++ {
		update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = fmt.Sprint(i) })
		// Each rollout is done before the next change, so none coalesce.
		g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(i))
	}
	lines := 0
	for _, l := range strings.Split(rr.logs.String(), "\n") {
		// The development console encoder: time, level, message, fields,
		// separated by tabs. This Reroll sees no other workload.
		if strings.Contains(l, "\t"+AuditRolled+"\t") {
			lines++
		}
	}
	g.Expect(lines).To(gomega.Equal(n), "one audit line per rollout")

	// The Events: n occurrences, but one Event object per distinct note.
	var list corev1.EventList
	g.Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	objects, notes := 0, map[string]bool{}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == "web" && e.Reason == ReasonRolled {
			objects++
			notes[e.Message] = true
		}
	}
	g.Expect(objects).To(gomega.Equal(len(notes)), "Events with equal notes are one Event with a count")
}
