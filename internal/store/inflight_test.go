package store

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/reroll/reroll/internal/digest"
)

// A create and an update of one ConfigMap that the watch queues together,
// both in the second of its creation: the update's transform runs before
// the create is indexed, and still tells a data change (the first-sight
// rule then rolls it; managedFields cannot, the write is in the creation's
// second).
func TestCompact_TellsAChangeQueuedBeforeTheCreateIsIndexed(t *testing.T) {
	g := gomega.NewWithT(t)
	key, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	created := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return created.Add(400 * time.Millisecond) }
	cm := func(rv, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: types.UID("u1"), ResourceVersion: rv,
				CreationTimestamp: metav1.NewTime(created),
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
					Time: &metav1.Time{Time: created}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)}}}},
			Data: map[string]string{"a": value},
		}
	}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	seen := newInFlight(indexer)
	transform := compact(key, seen, now)

	first, err := transform(cm("10", "1"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, changed := first.(*digest.Object).History()
	g.Expect(changed.IsZero()).To(gomega.BeTrue(), "a creation is no data change")

	// Queued before the create was indexed.
	second, err := transform(cm("11", "2"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, changed = second.(*digest.Object).History()
	g.Expect(changed).To(gomega.Equal(created), "the update is a data change, timed in its second")

	// Once both are indexed and handled, nothing stays in flight, and the
	// indexer serves the next transform: a label-only write carries the
	// change time forward.
	for _, o := range []any{first, second} {
		g.Expect(indexer.Update(o)).To(gomega.Succeed())
		seen.OnUpdate(nil, o)
	}
	g.Expect(seen.pending).To(gomega.BeEmpty())
	third := cm("12", "2")
	third.Labels = map[string]string{"team": "a"}
	out, err := transform(third)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, changed = out.(*digest.Object).History()
	g.Expect(changed).To(gomega.Equal(created))
}
