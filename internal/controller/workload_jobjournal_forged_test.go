package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/state"
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
	v, ok := cm.Data[state.EntryData]
	return v, ok
}

// Someone who can write ConfigMaps in Reroll's namespace forges a journal
// entry: a Job in another namespace, running as a service account of their
// choice. Reroll creates no Job from it and deletes the entry; an entry
// Reroll signed but moved to another Job's place is refused too.
func TestJobJournal_ForgedEntriesCreateNothing(t *testing.T) {
	g := newT(t)
	home, victim := newNamespace(t), newNamespace(t)
	journal := types.NamespacedName{Namespace: home, Name: "reroll-job-journal"}
	key := testKey(t, 7)
	forged := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "mine"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) {
			s.ServiceAccountName = "admin"
			s.RestartPolicy = corev1.RestartPolicyNever
		})}}}
	entry := types.NamespacedName{Namespace: victim, Name: "mine"}
	body := `{"uid":"x","job":` + string(mustJSON(t, forged)) + `}`
	// Unsigned, in the store's own shape.
	sum := sha256.Sum256([]byte(entry.String()))
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: journal.Name + "-" + hex.EncodeToString(sum[:10]),
		Labels:      map[string]string{state.StoreLabel: journal.Name, state.StoreNamespaceLabel: victim},
		Annotations: map[string]string{state.StoreEntryAnnotation: entry.String()}},
		Data: map[string]string{state.EntryData: body, state.SignatureData: "00000000000000000000000000000000"}})
	// Signed by Reroll for another Job (positive control of the
	// signature: it verifies for that one), copied to this one's place.
	s := state.NewEntries(k8s, k8s, journal, key, "the Job journal")
	other := types.NamespacedName{Namespace: victim, Name: "other"}
	g.Expect(s.Put(t.Context(), other, body)).To(gomega.Succeed())
	_, ok, err := s.Get(t.Context(), other)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue(), "Reroll's own entry verifies")

	startReroll(t, victim, Options{Kinds: batchKinds, JobJournal: journal, PlanOptions: plan.Options{Key: key}, Scope: scope.Scope{Namespaces: []string{victim}}})
	g.Eventually(func() bool { _, ok := storedEntry(t, journal, entry); return ok }).Should(gomega.BeFalse(), "the forged entry is deleted")
	g.Eventually(func() bool { _, ok := storedEntry(t, journal, other); return ok }).Should(gomega.BeFalse(), "the moved entry is dropped")
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(forged), &batchv1.Job{}))
	}).Should(gomega.BeTrue(), "no Job was created from a forged entry")
}

// TestJobJournal_LegacyEntriesAreReportedNotActedOn: the Job journal of a
// Reroll before the signed per-entry store is one ConfigMap named
// --job-journal, with a data key "<namespace>.<name>" per Job being
// re-created. Its entries are unsigned, and the deleted Job they could be
// checked against is gone, so they are not resumed: each is named in a
// log line and a Warning Event on that ConfigMap, which is left as it was.
func TestJobJournal_LegacyEntriesAreReportedNotActedOn(t *testing.T) {
	g := newT(t)
	home, victim := newNamespace(t), newNamespace(t)
	journal := types.NamespacedName{Namespace: home, Name: "reroll-job-journal"}
	key := testKey(t, 8)
	job := func(name string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: name},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) {
				s.RestartPolicy = corev1.RestartPolicyNever
			})}}}
	}
	legacy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: journal.Name},
		Data: map[string]string{victim + ".old": `{"uid":"x","job":` + string(mustJSON(t, job("old"))) + `}`}}
	create(t, legacy)
	// Positive control: an entry Reroll signed, in the current store, is
	// resumed by the same start.
	s := state.NewEntries(k8s, k8s, journal, key, "the Job journal")
	g.Expect(s.Put(t.Context(), types.NamespacedName{Namespace: victim, Name: "signed"}, `{"uid":"y","job":`+string(mustJSON(t, job("signed")))+`}`)).To(gomega.Succeed())

	rr := startReroll(t, victim, Options{Kinds: batchKinds, JobJournal: journal, PlanOptions: plan.Options{Key: key}, Scope: scope.Scope{Namespaces: []string{victim}}})
	g.Eventually(func() error { return k8s.Get(t.Context(), client.ObjectKeyFromObject(job("signed")), &batchv1.Job{}) }).Should(gomega.Succeed())
	g.Eventually(func() []string { return eventsWithReason(t, home, journal.Name, state.ReasonLegacyJournalEntry) }).Should(
		gomega.ConsistOf(gomega.ContainSubstring("Job " + victim + "/old: its re-creation, recorded here by an older Reroll, is not resumed")))
	g.Expect(rr.logs.String()).To(gomega.ContainSubstring("Not resuming a Job re-creation from an older Reroll's unsigned journal"))
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(job("old")), &batchv1.Job{}))
	}).Should(gomega.BeTrue(), "no Job was created from the unsigned entry")
	g.Expect(get(t, legacy).Data).To(gomega.HaveKey(victim+".old"), "the older journal is left for the operator")
}
