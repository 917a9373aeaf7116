package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/plan"
)

func TestWorkloadReconciler_LargeRecordFallsBackToOneDigestPerObject(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// 400 keys of 200 characters: a record of every key would be about
	// 90 KiB, over maxRecordBytes.
	data := map[string]string{}
	for i := range 400 {
		data[fmt.Sprintf("%s-%d", strings.Repeat("k", 200), i)] = "1"
	}
	create(t, configMap(ns, "big", data))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("big")))
	create(t, d)
	startReroll(t, ns, Options{})

	recorded(t, d)
	rec, err := plan.ParseRecord(get(t, d).Annotations[ObservedAnnotation])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(rec).To(gomega.HaveKeyWithValue("ConfigMap/big", gomega.HaveKey("*")))
	g.Expect(rec["ConfigMap/big"]).To(gomega.HaveLen(1))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonRecordTooLarge) }).Should(gomega.HaveLen(1))

	update(t, configMap(ns, "big", nil), func(cm *corev1.ConfigMap) { cm.Data[fmt.Sprintf("%s-7", strings.Repeat("k", 200))] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/big changed keys *")))
	g.Expect(eventsWithReason(t, ns, "web", plan.ReasonRecordTooLarge)).To(gomega.HaveLen(1), "one Warning per record written, not per reconcile")
}
