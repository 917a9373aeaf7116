package store

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/reference"
)

// TestStore_KeepsDataChangeTimeAndDeletions checks the first-sight rule's
// history: a write of data seen live sets the object's change time, even in
// the second of its creation (which managedFields cannot tell from the
// creation); a label-only write keeps it; a deletion is remembered with its
// revision.
func TestStore_KeepsDataChangeTimeAndDeletions(t *testing.T) {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	ctx := context.Background()
	ns := newNamespace(t, g, "history")
	st, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.ConfigMap}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	start(t, g, st)

	changed := func() time.Time {
		obj, ok, err := st.Get(ctx, reference.ConfigMap, ns, "cfg")
		if err != nil || !ok {
			return time.Time{}
		}
		_, c := obj.History()
		return c
	}
	cm, err := k8s.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() bool { _, ok, _ := st.Get(ctx, reference.ConfigMap, ns, "cfg"); return ok }).Should(gomega.BeTrue())
	g.Expect(changed()).To(gomega.BeZero(), "a creation is no data change")

	// A label-only write by another manager: no change (positive control
	// below).
	_, err = k8s.CoreV1().ConfigMaps(ns).Patch(ctx, "cfg", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{FieldManager: "labeler"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() string {
		obj, _, _ := st.Get(ctx, reference.ConfigMap, ns, "cfg")
		return obj.GetResourceVersion()
	}).ShouldNot(gomega.Equal(cm.ResourceVersion))
	g.Expect(changed()).To(gomega.BeZero(), "a label-only write is no data change")

	updated, err := k8s.CoreV1().ConfigMaps(ns).Patch(ctx, "cfg", types.MergePatchType, []byte(`{"data":{"a":"2"}}`), metav1.PatchOptions{FieldManager: "writer"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(changed).ShouldNot(gomega.BeZero())
	at := changed()
	g.Expect(at).To(gomega.BeTemporally(">=", cm.CreationTimestamp.Time))
	g.Expect(at).To(gomega.BeTemporally("<=", time.Now()))

	// The same label-only write again keeps the change time.
	_, err = k8s.CoreV1().ConfigMaps(ns).Patch(ctx, "cfg", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{FieldManager: "labeler"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() string {
		obj, _, _ := st.Get(ctx, reference.ConfigMap, ns, "cfg")
		return obj.GetResourceVersion()
	}).ShouldNot(gomega.Equal(updated.ResourceVersion))
	g.Expect(changed()).To(gomega.Equal(at))

	_, known := st.Deleted(reference.ConfigMap, ns, "cfg")
	g.Expect(known).To(gomega.BeFalse())
	g.Expect(k8s.CoreV1().ConfigMaps(ns).Delete(ctx, "cfg", metav1.DeleteOptions{})).To(gomega.Succeed())
	g.Eventually(func() bool { _, ok, _ := st.Get(ctx, reference.ConfigMap, ns, "cfg"); return ok }).Should(gomega.BeFalse())
	d, known := st.Deleted(reference.ConfigMap, ns, "cfg")
	g.Expect(known).To(gomega.BeTrue(), "noted before the informer dropped the object")
	g.Expect(d.ResourceVersion).To(gomega.BeNumerically(">", 0))
}
