package controller

import (
	"encoding/json"
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

// The security review applied, with kubectl, a Deployment referencing
// 3,000 ConfigMaps (a 171 KB last-applied-configuration): the record pushed
// the annotations past the API server's 256 KiB, every patch failed and no
// change ever rolled it. Scaled to 1,000 ConfigMaps with 60-character
// names, whose record of one digest per object (about 90 KB) does not fit
// beside the 180 KB that kubectl's annotation holds: the annotation budget
// is as tight as in the review.
func TestWorkloadReconciler_RecordFitsBesideKubectlsAnnotation(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("%s-%04d", strings.Repeat("c", 55), i))
		create(t, configMap(ns, names[i], map[string]string{"k": "1"}))
	}
	d := deployment(ns, "web", autoOn, podSpec(envFrom(names...), func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "NOTES", Value: strings.Repeat("n", 80_000)}}
	}))
	applied, err := json.Marshal(d)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	d.Annotations = map[string]string{"reroll.dev/auto": "true", corev1.LastAppliedConfigAnnotation: string(applied)}
	// The budget condition: one digest per object would not fit.
	perObject := 0
	for _, n := range names {
		perObject += len(`"ConfigMap/` + n + `":{"*":"0123456789abcdef"},`)
	}
	g.Expect(256<<10 - len(applied)).To(gomega.BeNumerically("<", perObject+4<<10))
	create(t, d)
	startReroll(t, ns, Options{})

	recorded(t, d)
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonRecordTooLarge) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("one digest for all")))
	update(t, configMap(ns, names[500], nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}
