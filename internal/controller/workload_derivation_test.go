package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
)

// v1Signed is state annotation name of the object uid as a Reroll before
// the v2 key derivation signed it: value, " sig=", and the first 16 bytes
// of the HMAC-SHA-256, under the v1 derivation's state key, of uid, name
// and value, each followed by a NUL byte.
func v1Signed(k digest.Key, uid, name, value string) string {
	m := hmac.New(sha256.New, k.DeriveV1("state"))
	for _, s := range []string{uid, name, value} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return value + " sig=" + hex.EncodeToString(m.Sum(nil)[:16])
}

// An upgrade to the v2 key derivation releases nothing and rolls nothing:
// a rollout that holds the only slot of --max-concurrent-rollouts=1 and a
// change waiting for it, both signed by the Reroll before the upgrade
// (under the v1 derivation), keep their places, and are signed again under
// v2. Past the migration deadline the same state counts as forged: the
// control that shows the deadline is what keeps them.
func TestWorkloadReconciler_StateSignedBeforeTheKeyDerivationUpgradeKeepsItsPlace(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 43)
	create(t, configMap(ns, "hold", map[string]string{"a": "1"}), configMap(ns, "cfg", map[string]string{"a": "1"}))
	holder := deployment(ns, "holder", autoOn, podSpec(envFrom("hold")))
	queued := deployment(ns, "queued", autoOn, podSpec(envFrom("cfg")))
	create(t, holder, queued)
	options := func(k digest.Key) Options {
		return Options{PlanOptions: plan.Options{Key: k, MaxConcurrentRollouts: 1, RolloutTimeout: 5 * time.Minute, Recheck: time.Second}}
	}
	before := startReroll(t, ns, options(key))
	for _, d := range []*appsv1.Deployment{holder, queued} {
		recorded(t, d)
		waitRolledOut(t, d)
	}
	// holder takes the slot (paused, its rollout runs on); queued waits.
	update(t, holder, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	update(t, configMap(ns, "hold", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "holder") }).Should(gomega.HaveLen(1))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() string { return get(t, queued).Annotations[plan.PendingAnnotation] }).Should(
		gomega.ContainSubstring(string(plan.DeferMaxConcurrent)))
	before.stop(t)

	// What the Reroll before the upgrade wrote: the same state, signed
	// under the v1 derivation.
	downgrade := func() {
		for obj, name := range map[*appsv1.Deployment]string{holder: plan.RolledAtAnnotation, queued: plan.PendingAnnotation} {
			update(t, obj, func(d *appsv1.Deployment) {
				d.Annotations[name] = v1Signed(key, string(d.UID), name, plan.Displayed(d.Annotations, name))
			})
		}
	}
	current := func(obj *appsv1.Deployment, name string) func() bool {
		return func() bool {
			d := get(t, obj)
			return d.Annotations[name] == plan.Sign(key, string(d.UID), name, plan.Displayed(d.Annotations, name))
		}
	}
	downgrade()
	g.Expect(current(holder, plan.RolledAtAnnotation)()).To(gomega.BeFalse(), "the state is signed as before the upgrade")

	// The upgrade: Reroll signs anew what it verifies under v1 (the
	// positive control that it read both)...
	after := startReroll(t, ns, options(key.WithV1DerivationsUntil(time.Now().Add(time.Hour))))
	g.Eventually(current(holder, plan.RolledAtAnnotation)).Should(gomega.BeTrue())
	g.Eventually(current(queued, plan.PendingAnnotation)).Should(gomega.BeTrue())
	// ...and nothing was released: queued still waits for the slot.
	g.Consistently(func() []string { return rolledEvents(t, ns, "queued") }).Should(gomega.BeEmpty())
	g.Expect(get(t, queued).Annotations[plan.PendingAnnotation]).To(gomega.ContainSubstring(string(plan.DeferMaxConcurrent)))
	for _, name := range []string{"holder", "queued"} {
		g.Expect(eventsWithReason(t, ns, name, plan.ReasonForgedState)).To(gomega.BeEmpty())
	}
	after.stop(t)

	// The control: past the deadline, the same v1 state is forged; the
	// slot is free and queued rolls.
	downgrade()
	startReroll(t, ns, options(key.WithV1DerivationsUntil(time.Now().Add(-time.Second))))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "holder", plan.ReasonForgedState) }).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() []string { return rolledEvents(t, ns, "queued") }).Should(gomega.HaveLen(1))
}
