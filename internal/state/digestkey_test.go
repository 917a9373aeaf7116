package state

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
)

func TestLoadDigestKey_CreatedOnceAndSharedByReplicas(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	name := types.NamespacedName{Namespace: ns, Name: "reroll-digest-key"}

	// Four replicas starting at once. Each goroutine only stores its result:
	// a failed assertion must not run off the test's goroutine.
	keys := make([]digest.Key, 4)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = LoadDigestKey(t.Context(), k8s, name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	var s corev1.Secret
	g.Expect(k8s.Get(t.Context(), name, &s)).To(gomega.Succeed())
	g.Expect(s.Data[DigestKeyData]).To(gomega.HaveLen(digest.MinKeyBytes))
	for _, k := range keys {
		g.Expect(k.ID()).NotTo(gomega.BeEmpty())
		g.Expect(k.ID()).To(gomega.Equal(keys[0].ID()))
	}
	again, err := LoadDigestKey(t.Context(), k8s, name)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again.ID()).To(gomega.Equal(keys[0].ID()), "a restart reads the same key")
}

// The migration deadline is written once: none on a Secret Reroll creates
// (no legacy record can exist), DefaultLegacyGrace after the first start on
// a Secret from before (an upgrade), the same at every later start.
func TestLoadLegacyRecordsUntil_WrittenOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	now := time.Now().UTC().Truncate(time.Second)

	created := types.NamespacedName{Namespace: ns, Name: "created"}
	_, err := LoadDigestKey(t.Context(), k8s, created)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	until, err := LoadLegacyRecordsUntil(t.Context(), k8s, created, now)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(until).To(gomega.BeTemporally("<=", now), "a new installation compares no legacy record")

	upgraded := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upgraded"},
		Data: map[string][]byte{DigestKeyData: bytes.Repeat([]byte{7}, digest.MinKeyBytes)}}
	create(t, upgraded)
	until, err = LoadLegacyRecordsUntil(t.Context(), k8s, client.ObjectKeyFromObject(upgraded), now)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(until).To(gomega.Equal(now.Add(DefaultLegacyGrace)))
	again, err := LoadLegacyRecordsUntil(t.Context(), k8s, client.ObjectKeyFromObject(upgraded), now.Add(48*time.Hour))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again).To(gomega.Equal(until), "a later start keeps the deadline")
}

func TestLoadInstalledAt_WrittenOnceAndSharedByReplicas(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A key Secret the user provided, without the annotation.
	name := types.NamespacedName{Namespace: ns, Name: "user-key"}
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name.Name}, Data: map[string][]byte{DigestKeyData: make([]byte, 32)}})

	// Replicas starting at once, each with its own clock.
	times := make([]time.Time, 4)
	var wg sync.WaitGroup
	for i := range times {
		wg.Go(func() {
			at, err := LoadInstalledAt(t.Context(), k8s, name, time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
			g.Expect(err).NotTo(gomega.HaveOccurred())
			times[i] = at
		})
	}
	wg.Wait()
	for _, at := range times {
		g.Expect(at).To(gomega.Equal(times[0]), "every replica reads the time the first write made")
	}
	g.Expect(get(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name.Name}}).Annotations).
		To(gomega.HaveKeyWithValue(InstalledAtAnnotation, times[0].Format(time.RFC3339)))
	again, err := LoadInstalledAt(t.Context(), k8s, name, time.Now())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again).To(gomega.Equal(times[0]), "a restart reads the same time")

	// A key Secret Reroll creates carries it from its creation.
	own := types.NamespacedName{Namespace: ns, Name: "reroll-digest-key"}
	before := time.Now().Truncate(time.Second)
	_, err = LoadDigestKey(t.Context(), k8s, own)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	at, err := LoadInstalledAt(t.Context(), k8s, own, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(at).To(gomega.BeTemporally(">=", before))
	g.Expect(at).To(gomega.BeTemporally("<=", time.Now()))
}

// The v1 derivation's deadline is written once: the creation time on a
// Secret Reroll creates (nothing was ever signed under v1), 7 days after
// the first start on one that existed before (an upgrade), and a later
// start keeps it.
func TestLoadV1DerivationsUntil_WrittenOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	now := time.Now().UTC().Truncate(time.Second)

	created := types.NamespacedName{Namespace: ns, Name: "created"}
	_, err := LoadDigestKey(t.Context(), k8s, created)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	until, err := LoadV1DerivationsUntil(t.Context(), k8s, created, now)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(until).To(gomega.BeTemporally("<=", now), "a new installation accepts no v1 signature")

	// A Secret of a Reroll before v2: it has the legacy deadline already.
	upgraded := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upgraded",
		Annotations: map[string]string{LegacyRecordsUntilAnnotation: now.Add(-time.Hour).Format(time.RFC3339)}},
		Data: map[string][]byte{DigestKeyData: bytes.Repeat([]byte{7}, digest.MinKeyBytes)}}
	create(t, upgraded)
	until, err = LoadV1DerivationsUntil(t.Context(), k8s, client.ObjectKeyFromObject(upgraded), now)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(until).To(gomega.Equal(now.Add(DefaultV1DerivationsGrace)))
	again, err := LoadV1DerivationsUntil(t.Context(), k8s, client.ObjectKeyFromObject(upgraded), now.Add(30*24*time.Hour))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again).To(gomega.Equal(until), "a later start keeps the deadline")
	legacy, err := LoadLegacyRecordsUntil(t.Context(), k8s, client.ObjectKeyFromObject(upgraded), now)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(legacy).To(gomega.Equal(now.Add(-time.Hour)), "the legacy scheme's deadline is its own")
}
