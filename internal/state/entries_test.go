package state

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storedEntry reads entry e of the store at (Reroll's namespace and the
// store's prefix) as a user would: the ConfigMap named after the SHA-256 of
// "<namespace>/<name>" (`printf ns/name | sha256sum | cut -c1-20`).
func storedEntry(t *testing.T, at, e types.NamespacedName) (string, bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(e.Namespace + "/" + e.Name))
	var cm corev1.ConfigMap
	err := k8s.Get(t.Context(), client.ObjectKey{Namespace: at.Namespace, Name: at.Name + "-" + hex.EncodeToString(sum[:10])}, &cm)
	if apierrors.IsNotFound(err) {
		return "", false
	}
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	v, ok := cm.Data[EntryData]
	return v, ok
}

// One tenant namespace fills only its own share of a store: past the bound
// its new entries are refused, and another namespace's still go in. Each
// entry is one ConfigMap, so writing one never rewrites another.
func TestEntryStore_BoundedPerNamespace(t *testing.T) {
	g := newT(t)
	home := newNamespace(t)
	at := types.NamespacedName{Namespace: home, Name: "reroll-pod-records"}
	s := NewEntries(k8s, k8s, at, testKey(t, 6), "the pod records")
	s.PerNamespace = 2
	for _, name := range []string{"a", "b"} {
		g.Expect(s.Put(t.Context(), types.NamespacedName{Namespace: "tenant", Name: name}, "{}")).To(gomega.Succeed())
	}
	err := s.Put(t.Context(), types.NamespacedName{Namespace: "tenant", Name: "c"}, "{}")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("namespace tenant holds 2 entries in the pod records")))
	g.Expect(s.Put(t.Context(), types.NamespacedName{Namespace: "tenant", Name: "a"}, `{"x":"1"}`)).To(gomega.Succeed(), "an existing entry is still written")
	g.Expect(s.Put(t.Context(), types.NamespacedName{Namespace: "other", Name: "a"}, "{}")).To(gomega.Succeed(), "another namespace is not blocked")
	v, ok := storedEntry(t, at, types.NamespacedName{Namespace: "tenant", Name: "a"})
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(v).To(gomega.Equal(`{"x":"1"}`))
	v, ok, err = s.Get(t.Context(), types.NamespacedName{Namespace: "other", Name: "a"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(v).To(gomega.Equal("{}"))
}
