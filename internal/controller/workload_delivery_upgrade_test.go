package controller

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/plan"
)

// An older Reroll kept every halt record in one ConfigMap named the
// prefix, by the set IDs of the time (delivery.LegacySetID), and left a
// workload held for a halted set: its canary's rollout of the content
// failed. After the upgrade the held workload joins today's set of the
// same content (another ID), and stays held: the old halt is recorded again
// for today's set, signed, and the old ConfigMap goes. Resumed (the
// positive control), it rolls once.
func TestDelivery_AnUpgradeKeepsTheHaltsOfAnOlderRerollsOneConfigMap(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, ns := newNamespace(t), newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"level": "info"}))
	canary := deployment(ns, "canary", map[string]string{"reroll.dev/auto": "true", safe.WaveAnnotation: "-1"}, podSpec(envFrom("cfg")))
	web := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true"}, podSpec(envFrom("cfg")))
	for _, d := range []*appsv1.Deployment{canary, web} {
		d.Spec.Replicas = ptr.To[int32](1)
		create(t, d)
	}
	opts := deliveryOptions(t, own, own, ns)
	older := startReroll(t, own, opts)
	for _, d := range []*appsv1.Deployment{canary, web} {
		recorded(t, d)
		waitRolledOut(t, d)
	}
	older.stop(t)

	// What the older Reroll left: the bad content, web held for its set,
	// the halt in the one ConfigMap.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"level": "bad"} })
	data, ok := opts.Key.Of(get(t, configMap(ns, "cfg", nil)))
	g.Expect(ok).To(gomega.BeTrue())
	legacyID := safe.LegacySetID("ConfigMap", "cfg", data.Keys, false)
	now := time.Now().UTC().Truncate(time.Second)
	update(t, web, func(d *appsv1.Deployment) {
		r := safe.Record{Sets: []string{legacyID}, Objects: []string{"ConfigMap/" + ns + "/cfg"}, Seen: now.Add(-time.Minute)}
		d.Annotations[safe.MemberAnnotation] = plan.Sign(opts.Key, string(d.UID), safe.MemberAnnotation, r.String())
	})
	legacy := configMap(own, "reroll-change-sets", map[string]string{legacyID: safe.Halt{Halted: now.Add(-30 * time.Second),
		Failed: []string{"Deployment/" + ns + "/canary"}, Signal: "Deployment/" + ns + "/canary: Progress deadline exceeded",
		Objects: []string{"ConfigMap/" + ns + "/cfg"}}.String()})
	create(t, legacy)
	template := get(t, web).Spec.Template

	startReroll(t, own, opts)
	g.Eventually(func() string { return pendingReason(t, web) }).Should(gomega.Equal(safe.HoldHalted))
	id := member(t, web).Sets[0]
	g.Expect(id).NotTo(gomega.Equal(legacyID), "web joined today's set")
	g.Eventually(func() error {
		return k8s.Get(t.Context(), types.NamespacedName{Namespace: own, Name: "reroll-change-sets"}, &corev1.ConfigMap{})
	}).Should(gomega.Satisfy(apierrors.IsNotFound), "the old ConfigMap goes once its halts are recorded again")
	h := haltRecord(t, opts.Key, own, id)
	g.Expect(h.Active()).To(gomega.BeTrue())
	g.Expect(h.Failed).To(gomega.Equal([]string{"Deployment/" + ns + "/canary"}))
	g.Consistently(func() corev1.PodTemplateSpec { return get(t, web).Spec.Template }, 5*time.Second).Should(gomega.Equal(template))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())

	resumeSet(t, own, id)
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }, 5*time.Second).Should(gomega.HaveLen(1))
}
