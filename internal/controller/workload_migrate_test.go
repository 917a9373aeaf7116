package controller

import (
	"bytes"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
)

// changingAndStill creates, in ns, Deployment web reading ConfigMap cfg
// (which the test changes) and Deployment api reading ConfigMap still
// (which stays), and waits for their first ReplicaSets.
func changingAndStill(t *testing.T, ns string) (web, api *appsv1.Deployment) {
	t.Helper()
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(ns, "still", map[string]string{"a": "1"}))
	web = deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	api = deployment(ns, "api", autoOn, podSpec(envFrom("still")))
	create(t, web, api)
	waitFirstReplicaSet(t, web)
	waitFirstReplicaSet(t, api)
	return web, api
}

// Records made by a Reroll whose digests were the value's alone (the legacy
// scheme, under the same installation key) are made again under digests
// bound to their place without a rollout; a change made while Reroll was
// upgraded still rolls, once, before the record is made again.
func TestWorkloadReconciler_LegacyRecordsMigrateWithoutLosingAChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	_, api := changingAndStill(t, ns)
	key := testKey(t, 3)

	old := startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key.Legacy()}})
	for _, d := range []string{"web", "api"} {
		g.Eventually(func() map[string]string { return get(t, deployment(ns, d, nil, podSpec())).Annotations }).
			Should(gomega.HaveKeyWithValue(KeyAnnotation, key.Legacy().ID()), "the older Reroll recorded %s", d)
	}
	old.stop(t)
	// Made during the upgrade: the older Reroll is gone, the new one not
	// yet started.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })

	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}, LegacyRecordsUntil: time.Now().Add(time.Hour)})
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")),
		"the change made during the upgrade rolls")
	for _, d := range []string{"web", "api"} {
		g.Eventually(func() map[string]string { return get(t, deployment(ns, d, nil, podSpec())).Annotations }).
			Should(gomega.HaveKeyWithValue(KeyAnnotation, key.ID()), "%s is recorded again under the bound scheme", d)
	}
	rec, err := plan.ParseRecord(get(t, api).Annotations[ObservedAnnotation])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(rec["ConfigMap/still"]["a"]).To(gomega.Equal(key.Digest("ConfigMap", ns, "still", "a", []byte("1"))[:16]))
	g.Consistently(func() []string { return rolledEvents(t, ns, "api") }).Should(gomega.BeEmpty(), "an unchanged workload does not roll")
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1), "the change rolled once")
	g.Expect(replicaSets(t, ns, "api")).To(gomega.HaveLen(1))

	// Under the bound scheme, a change rolls as usual.
	update(t, configMap(ns, "still", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "api") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/still changed keys a")))
}

// The rotation procedure of docs/security.md: the new key in "key", the
// old one in "previous". Records made under the old key are compared under
// it, so a change made during the rotation rolls, once; every record is
// then made again under the new key, and nothing else rolls.
func TestWorkloadReconciler_KeyRotationLosesNoChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	web, api := changingAndStill(t, ns)
	oldKey, newSecret := testKey(t, 4), bytes.Repeat([]byte{5}, digest.MinKeyBytes)

	// The key Secret as the procedure leaves it, read as Reroll starts.
	keySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reroll-digest-key"},
		Data: map[string][]byte{state.DigestKeyData: bytes.Repeat([]byte{4}, digest.MinKeyBytes)}}
	create(t, keySecret)
	loaded, err := state.LoadDigestKey(t.Context(), k8s, client.ObjectKeyFromObject(keySecret))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(loaded.ID()).To(gomega.Equal(oldKey.ID()))
	old := startReroll(t, ns, Options{PlanOptions: plan.Options{Key: loaded}})
	for _, d := range []*appsv1.Deployment{web, api} {
		g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.HaveKeyWithValue(KeyAnnotation, oldKey.ID()))
	}
	old.stop(t)

	update(t, keySecret, func(s *corev1.Secret) {
		s.Data[state.DigestKeyPreviousData] = s.Data[state.DigestKeyData]
		s.Data[state.DigestKeyData] = newSecret
	})
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	rotated, err := state.LoadDigestKey(t.Context(), k8s, client.ObjectKeyFromObject(keySecret))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	newKey := testKey(t, 5)
	g.Expect(rotated.ID()).To(gomega.Equal(newKey.ID()))
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: rotated}})

	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")),
		"the change made during the rotation rolls")
	for _, d := range []*appsv1.Deployment{web, api} {
		g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.HaveKeyWithValue(KeyAnnotation, newKey.ID()))
	}
	g.Consistently(func() []string { return rolledEvents(t, ns, "api") }).Should(gomega.BeEmpty())
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))
}
