package controller

import (
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/eviction"
)

// operandGVK is an operator's kind Reroll is not told about: no
// --evict-owner names it.
var operandGVK = schema.GroupVersionKind{Group: "test.reroll.dev", Version: "v1", Kind: "Operand"}

func TestAnnotatedPods_OfAnUnknownOwnerAreEvictedOnceButNeverBareOrUnannotatedOnes(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	labels := labelsFor("db")
	l := watchPods(t, ns, labels)
	installCRD(t, looseCRD("test.reroll.dev", "Operand", "operands"))
	// The operator re-creates 2 annotated pods; the Operand itself carries
	// no annotation.
	op := runPodOwner(t, operandGVK, ns, "db", 2, labels, nil, autoOn)
	// A pod of the same owner without the opt-in annotation, and an
	// annotated pod owned by nothing.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain", Labels: labels, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "test.reroll.dev/v1", Kind: "Operand", Name: "db", UID: op.GetUID(), Controller: ptr.To(true)},
	}}, Spec: podSpec(envFrom("cfg"))}
	lonely := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lonely", Labels: labels, Annotations: autoOn}, Spec: podSpec(envFrom("cfg"))}
	create(t, plain, lonely)
	live := l.allReady(t, 4)
	var old []types.UID
	for _, uid := range live {
		if uid != plain.UID && uid != lonely.UID {
			old = append(old, uid)
		}
	}
	g.Expect(old).To(gomega.HaveLen(2))
	records := types.NamespacedName{Namespace: ns, Name: "reroll-pod-records"}
	startReroll(t, ns, Options{PodEviction: true, PodRecords: records})
	record := func(uid types.UID) map[string]string {
		v, ok := storedEntry(t, records, types.NamespacedName{Namespace: ns, Name: string(uid)})
		if !ok {
			return nil
		}
		var out map[string]string
		g.Expect(json.Unmarshal([]byte(v), &out)).To(gomega.Succeed(), "a pod group's record is JSON")
		return out
	}
	// First sight records both groups and evicts nothing.
	g.Eventually(func() map[string]string { return record(op.GetUID()) }).Should(gomega.HaveKey(ObservedAnnotation))
	g.Eventually(func() map[string]string { return record(lonely.UID) }).Should(gomega.HaveKey(ObservedAnnotation))
	_, _, deleted, _ := l.state()
	g.Expect(deleted).To(gomega.BeEmpty())

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })

	// Positive: the Operand's annotated pods are replaced, each evicted
	// once, and the restart ends.
	g.Eventually(func() []types.UID {
		_, _, deleted, _ := l.state()
		return keys(deleted)
	}).Should(gomega.ConsistOf(old))
	g.Eventually(func() map[string]string { return record(op.GetUID()) }).ShouldNot(gomega.HaveKey(eviction.ProgressAnnotation))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "lonely", ReasonNotEvicted) }).Should(gomega.ConsistOf(gomega.HavePrefix("Not evicting pod lonely: it has no owner")))
	live, ready, deleted, _ := l.state()
	g.Expect(ready).To(gomega.Equal(4))
	g.Expect(live).To(gomega.ContainElements(lonely.UID, plain.UID), "the bare and the unannotated pod still run")
	g.Expect(deleted).NotTo(gomega.HaveKey(lonely.UID), "the bare pod was never evicted")
	g.Expect(deleted).NotTo(gomega.HaveKey(plain.UID), "the unannotated pod was never evicted")
	for _, uid := range old {
		g.Expect(deleted[uid]).To(gomega.Equal(1), "each old pod was evicted once")
	}
}

func TestAnnotatedPods_AChangeWhileRerollWasDownEvictsEachPodOnce(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"k": "1"}))
	labels := labelsFor("db")
	l := watchPods(t, ns, labels)
	installCRD(t, looseCRD("test.reroll.dev", "Operand", "operands"))
	op := runPodOwner(t, operandGVK, ns, "db", 2, labels, nil, autoOn)
	old := l.allReady(t, 2)
	records := types.NamespacedName{Namespace: ns, Name: "reroll-pod-records"}
	first := startReroll(t, ns, Options{PodEviction: true, PodRecords: records})
	group := types.NamespacedName{Namespace: ns, Name: string(op.GetUID())}
	g.Eventually(func() string {
		v, _ := storedEntry(t, records, group)
		return v
	}).Should(gomega.ContainSubstring(ObservedAnnotation))
	first.stop(t)

	update(t, configMap(ns, "cfg", nil), func(c *corev1.ConfigMap) { c.Data["k"] = "2" })
	startReroll(t, ns, Options{PodEviction: true, PodRecords: records})

	// Positive: both pods are replaced; the replacements, created after
	// the change, are never evicted.
	g.Eventually(func() []types.UID {
		_, _, deleted, _ := l.state()
		return keys(deleted)
	}).Should(gomega.ConsistOf(old))
	g.Eventually(func() string {
		v, ok := storedEntry(t, records, group)
		g.Expect(ok).To(gomega.BeTrue())
		return v
	}).ShouldNot(gomega.ContainSubstring(eviction.ProgressAnnotation))
	live, ready, deleted, _ := l.state()
	g.Expect(ready).To(gomega.Equal(2))
	g.Expect(live).To(gomega.HaveLen(2))
	g.Expect(deleted).To(gomega.HaveLen(2), "only the two old pods were evicted")
	for _, uid := range old {
		g.Expect(deleted[uid]).To(gomega.Equal(1), "each old pod was evicted once")
	}
}
