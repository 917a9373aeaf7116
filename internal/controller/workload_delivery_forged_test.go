package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/plan"
)

// A tenant writes a change-set record by hand on a workload that Reroll
// refuses (its list patterns cost too much to match: plan.Refused). Reroll
// refuses it (the positive control: the InvalidAnnotation Warning), and
// still removes the forged record with a ForgedState Warning, so it names
// no set: it keeps no halt alive nor raises the halted alert.
func TestDelivery_AForgedRecordOnARefusedWorkloadIsRemoved(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, ns := newNamespace(t), newNamespace(t)
	// As TestWorkloadReconciler_CountsPatternsRefusedForCost: past
	// annotation.MaxMatchCost by the fourth name.
	for i := range 8 {
		create(t, configMap(ns, fmt.Sprintf("%s-%04d", strings.Repeat("n", 240), i), map[string]string{"a": "1"}))
	}
	a := tenantList(func(j int) string { return "(?:.?){80}#" + strings.Repeat("b", j%10) })
	a[safe.MemberAnnotation] = safe.Record{Sets: []string{"0123456789abcdef"}, Failed: "forged by a tenant"}.String()
	d := deployment(ns, "costly", a, podSpec())
	create(t, d)
	startReroll(t, own, deliveryOptions(t, own, own, ns))

	g.Eventually(func() []string { return eventsWithReason(t, ns, "costly", ReasonInvalidAnnotation) }).Should(
		gomega.ContainElement(gomega.ContainSubstring("configmap.reloader.stakater.com/reload")))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "costly", plan.ReasonForgedState) }).Should(
		gomega.ContainElement(gomega.ContainSubstring(safe.MemberAnnotation)))
	g.Eventually(func() map[string]string { return get(t, d).Annotations }).ShouldNot(gomega.HaveKey(safe.MemberAnnotation))
	g.Expect(rolledEvents(t, ns, "costly")).To(gomega.BeEmpty())
}
