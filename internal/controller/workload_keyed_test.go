package controller

import (
	"bytes"
	"context"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/trigger"

	"github.com/reroll/reroll/internal/plan"
)

func testKey(t *testing.T, b byte) digest.Key {
	t.Helper()
	k, err := digest.NewKey(bytes.Repeat([]byte{b}, digest.MinKeyBytes))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return k
}

func TestWorkloadReconciler_RecordsKeyedDigests(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, secret(ns, "db", map[string]string{"password": "correct-horse"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	}))
	create(t, d)
	key := testKey(t, 1)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})

	recorded(t, d)
	rec, err := plan.ParseRecord(get(t, d).Annotations[ObservedAnnotation])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// Bound to its place (the namespace is the test's, so the digest is
	// computed in Go; TestKey_DigestBoundToPlace pins Digest against
	// openssl), not the value's HMAC alone (printf correct-horse | openssl
	// dgst -sha256 -mac HMAC -macopt hexkey:$(printf '01%.0s' $(seq 32)):
	// 03e03febdbc6dbef), nor its plain SHA-256 (9dca666eb5473071).
	g.Expect(rec["Secret/db"]["password"]).To(gomega.Equal(key.Digest("Secret", ns, "db", "password", []byte("correct-horse"))[:16]))
	g.Expect(rec["Secret/db"]["password"]).NotTo(gomega.Or(gomega.Equal("03e03febdbc6dbef"), gomega.Equal("9dca666eb5473071")))
	// The key id: printf 'reroll.dev key id, digests bound to their place' | openssl dgst -sha256 -mac HMAC -macopt hexkey:..., 8 characters.
	g.Expect(get(t, d).Annotations).To(gomega.HaveKeyWithValue(KeyAnnotation, "cb83fc25"))
}

func TestWorkloadReconciler_NewKeyRecordsAgainWithoutRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	waitFirstReplicaSet(t, d)

	// An older Reroll: unkeyed digests, no key id.
	legacy := startReroll(t, ns, Options{})
	recorded(t, d)
	g.Expect(get(t, d).Annotations).NotTo(gomega.HaveKey(KeyAnnotation))
	legacy.stop(t)

	for _, key := range []digest.Key{testKey(t, 1), testKey(t, 2)} {
		before := get(t, d).Annotations[ObservedAnnotation]
		rr := startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
		g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.HaveKeyWithValue(KeyAnnotation, key.ID()))
		g.Expect(get(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.Equal(before), "digests made under the new key")
		g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.BeEmpty())
		g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(1))
		rr.stop(t)
	}

	// Under the current key, a change rolls as usual.
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: testKey(t, 2)}})
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.HaveSuffix("ConfigMap/cfg changed keys a")))
}

// TestWorkloadReconciler_KeyedCompatHashes: with --keyed-compat-hashes,
// Reloader's SHA-1 is written as its HMAC bound to the object it is the
// hash of, so the same data in two namespaces gives unrelated values (a
// tenant who can read another namespace's workloads cannot test guesses of
// its data with a ConfigMap of their own), and a workload carrying a value
// of the scheme before the binding does not roll when Reroll restarts with
// the new one. The namespaces have fixed names: the expected values are
// computed outside Go from them.
func TestWorkloadReconciler_KeyedCompatHashes(t *testing.T) {
	t.Parallel()
	g := newT(t)
	a, b := fixedNamespace(t, "keyed-compat-a"), fixedNamespace(t, "keyed-compat-b")
	create(t, configMap(a, "foo", map[string]string{"a": "1"}), configMap(b, "foo", map[string]string{"a": "1"}),
		configMap(a, "bar", map[string]string{"b": "1"}))
	webA, webB := deployment(a, "web", reloaderAutoOn, podSpec(envFrom("foo"))), deployment(b, "web", reloaderAutoOn, podSpec(envFrom("foo")))
	// Rolled for bar by Reroll before the binding: Reloader's SHA-1
	// (printf b=1 | sha1sum: 7157b39a0263327440e926c5b4f2a4d573511d7a),
	// then its HMAC alone:
	// printf 7157b39a0263327440e926c5b4f2a4d573511d7a | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '03%.0s' $(seq 32))
	const oldValue = "d30faf4089188fa567253a6eeb5e4efd353545e3188514bd897ec9f4ee9c758d"
	old := deployment(a, "old", reloaderAutoOn, podSpec(envFrom("bar"), func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_BAR_CONFIGMAP", Value: oldValue}}
	}))
	create(t, webA, webB, old)
	startReroll(t, a, Options{Scope: scope.Scope{Namespaces: []string{a, b}}, PlanOptions: plan.Options{Key: testKey(t, 3), Strategy: trigger.EnvVars, KeyedCompatHashes: true}})
	recorded(t, webA)
	recorded(t, webB)
	recorded(t, old)
	generation := get(t, old).Generation

	for _, ns := range []string{a, b} {
		update(t, configMap(ns, "foo", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	}
	// Reloader's SHA-1 (printf a=2 | sha1sum), then its HMAC-SHA-256 under
	// the key, bound to the ConfigMap, computed outside Go:
	// printf 'reroll.dev/compat/v1\0ConfigMap\0keyed-compat-a\0foo\0d6dbf8a400e3e00c352f9ceeca960bdf64ab6377' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '03%.0s' $(seq 32))
	// and the same with keyed-compat-b.
	for ns, want := range map[string]string{
		a: "6adbd3aa858f76e24f6994724467e5278b41baca0510310c1bce6d69e4578937",
		b: "20f9c980b33721be58f9a7fd7cce871a5f3cc11992df91e71e23cacdd7f1ec85",
	} {
		g.Eventually(func() []corev1.EnvVar {
			return get(t, deployment(ns, "web", nil, corev1.PodSpec{})).Spec.Template.Spec.Containers[0].Env
		}).Should(gomega.ConsistOf(
			corev1.EnvVar{Name: "STAKATER_FOO_CONFIGMAP", Value: want}), "keyed in place of Reloader's SHA-1, bound to %s/foo", ns)
	}
	// The rollouts above are the positive control: the workload with the
	// value of the old scheme was recorded by the same Reroll and did not
	// roll; the value is only written at a rollout, never compared.
	g.Consistently(func() int64 { return get(t, old).Generation }).Should(gomega.Equal(generation))
	g.Expect(get(t, old).Spec.Template.Spec.Containers[0].Env).To(gomega.ConsistOf(corev1.EnvVar{Name: "STAKATER_BAR_CONFIGMAP", Value: oldValue}))
	g.Expect(rolledEvents(t, a, "old")).To(gomega.BeEmpty())
}

// fixedNamespace creates the namespace name (for expected values computed
// from it) and deletes it after the test.
func fixedNamespace(t *testing.T, name string) string {
	t.Helper()
	g := newT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(k8s.Create(t.Context(), ns)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	g.Eventually(func() error {
		return k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(gomega.Succeed())
	return name
}
