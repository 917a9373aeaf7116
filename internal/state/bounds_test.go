package state

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// responseSizes records the size of every response body read through it,
// and counts the requests, by method and path.
type responseSizes struct {
	mu     sync.Mutex
	sizes  map[string]int
	counts map[string]int
	next   http.RoundTripper
}

func (r *responseSizes) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.counts[req.Method]++
	r.mu.Unlock()
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func(n int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		k := req.Method + " " + req.URL.Path
		r.sizes[k] = max(r.sizes[k], n)
	}}
	return resp, nil
}

// writes returns how many PUT, POST, PATCH and DELETE requests went
// through.
func (r *responseSizes) writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[http.MethodPut] + r.counts[http.MethodPost] + r.counts[http.MethodPatch] + r.counts[http.MethodDelete]
}

// largest returns the largest body of a request whose "METHOD path"
// contains part.
func (r *responseSizes) largest(part string) (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, at := 0, ""
	for k, v := range r.sizes {
		if strings.Contains(k, part) && v > n {
			n, at = v, k
		}
	}
	return n, at
}

type countedBody struct {
	io.ReadCloser
	n    int
	done func(int)
	once sync.Once
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += n
	return n, err
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.done(b.n) })
	return b.ReadCloser.Close()
}

// countingClient returns a client of the plane's admin whose responses are
// measured by the returned responseSizes.
func countingClient(t *testing.T) (client.Client, *responseSizes) {
	t.Helper()
	sizes := &responseSizes{sizes: map[string]int{}, counts: map[string]int{}}
	cfg := rest.CopyConfig(plane.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { sizes.next = rt; return sizes }
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return c, sizes
}

// quiet is the test's context with a logger that drops the journal's log
// lines (one per entry dropped).
func quiet(t *testing.T) context.Context {
	return ctrl.LoggerInto(t.Context(), logr.Discard())
}

// signedEntry writes entry e with value into the store s as an older
// Reroll, with no bound on its size, would have: signed, in its place.
func signedEntry(t *testing.T, s *Entries, e types.NamespacedName, value string) {
	t.Helper()
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.configMapName(e),
		Labels:      map[string]string{StoreLabel: s.prefix, StoreNamespaceLabel: e.Namespace},
		Annotations: map[string]string{StoreEntryAnnotation: e.String()}},
		Data: map[string]string{EntryData: value, SignatureData: s.sign(e, value)}})
}

// entryCount returns how many ConfigMaps the store at holds.
func entryCount(t *testing.T, at types.NamespacedName) int {
	t.Helper()
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(at.Namespace), client.MatchingLabels{StoreLabel: at.Name})).To(gomega.Succeed())
	return len(list.Items)
}

// The third security review (H2): every leader start LISTed all journal
// entries in one response, and a Job whose create the API server refuses
// left its entry (up to 1 MiB) forever, so ~100 of them made Reroll exceed
// the chart's 256 Mi at every start. The start now lists names only and
// reads one entry at a time: with 100 signed entries of ~1 MiB, no response
// it reads is larger than one entry, and each entry whose Job is refused as
// invalid is dropped.
func TestJobJournal_StartReadsOneEntryAtATime(t *testing.T) {
	g := newT(t)
	home, victim := newNamespace(t), newNamespace(t)
	at := types.NamespacedName{Namespace: home, Name: "reroll-job-journal"}
	c, sizes := countingClient(t)
	j := &JobJournal{store: NewEntries(c, c, at, testKey(t, 33), "the Job journal")}
	nsUID := get(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}).UID
	const entries = 100
	pad := strings.Repeat("p", 1_000_000)
	for i := range entries {
		// Job annotations are limited to 256 KiB: the API server refuses
		// this Job as invalid, every time.
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: fmt.Sprintf("job-%d", i), Annotations: map[string]string{"pad": pad}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever })}}}
		b, err := json.Marshal(journalEntry{UID: "old", Job: job, NamespaceUID: nsUID})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		signedEntry(t, j.store, client.ObjectKeyFromObject(job), string(b))
	}
	g.Expect(entryCount(t, at)).To(gomega.Equal(entries))

	g.Expect(j.Start(quiet(t))).To(gomega.Succeed())
	// Positive control: the measurement sees the entries' own size.
	n, where := sizes.largest("/namespaces/" + home + "/configmaps")
	g.Expect(n).To(gomega.BeNumerically(">", 1_000_000), "the largest response (%s)", where)
	// One entry at a time: no response holds two.
	g.Expect(n).To(gomega.BeNumerically("<", 2_000_000), "the largest response (%s)", where)
	g.Expect(entryCount(t, at)).To(gomega.BeZero(), "entries whose Job is refused as invalid are dropped")
	var jobs batchv1.JobList
	g.Expect(k8s.List(t.Context(), &jobs, client.InNamespace(victim))).To(gomega.Succeed())
	g.Expect(jobs.Items).To(gomega.BeEmpty())
}

// The third security review (M5): journal entries were keyed by the
// namespace's name and never expired, so after a namespace was deleted and
// its name taken by another team, a leader start created the old tenant's
// Job (its image, its envFrom) in the new namespace. An entry is now bound
// to the namespace's UID and lives JobJournalMaxAge.
func TestJobJournal_EntryIsNeverReplayedIntoAnotherNamespace(t *testing.T) {
	g := newT(t)
	home, live := newNamespace(t), newNamespace(t)
	at := types.NamespacedName{Namespace: home, Name: "reroll-job-journal"}
	j := &JobJournal{store: NewEntries(k8s, k8s, at, testKey(t, 34), "the Job journal")}
	reused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reused-" + live}}
	create(t, reused)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: reused.Name}})
	})
	manifest := func(ns string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-tenants"},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever })}}}
	}
	g.Expect(j.Save(t.Context(), manifest(reused.Name), "old")).To(gomega.Succeed())
	// Positive control: the entry of a namespace that is still the same is
	// replayed by the same start.
	g.Expect(j.Save(t.Context(), manifest(live), "old")).To(gomega.Succeed())

	g.Expect(k8s.Delete(t.Context(), reused)).To(gomega.Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKey{Name: reused.Name}, &corev1.Namespace{}))
	}, 2*time.Minute).Should(gomega.BeTrue())
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: reused.Name}})

	g.Expect(j.Start(quiet(t))).To(gomega.Succeed())
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(manifest(live)), &batchv1.Job{})).To(gomega.Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(manifest(reused.Name)), &batchv1.Job{}))).To(gomega.BeTrue(),
		"no Job is created from an entry of the earlier namespace")
	g.Expect(entryCount(t, at)).To(gomega.BeZero())
}

// Journal entries expire: one older than JobJournalMaxAge is deleted
// unread at the next start.
func TestJobJournal_ExpiredEntriesAreDropped(t *testing.T) {
	g := newT(t)
	home, victim := newNamespace(t), newNamespace(t)
	at := types.NamespacedName{Namespace: home, Name: "reroll-job-journal"}
	j := &JobJournal{store: NewEntries(k8s, k8s, at, testKey(t, 35), "the Job journal")}
	j.store.MaxAge = JobJournalMaxAge
	manifest := func(name string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: name},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever })}}}
	}
	// Positive control: a fresh entry is replayed.
	g.Expect(j.Save(t.Context(), manifest("fresh"), "old")).To(gomega.Succeed())
	g.Expect(j.Start(quiet(t))).To(gomega.Succeed())
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(manifest("fresh")), &batchv1.Job{})).To(gomega.Succeed())

	g.Expect(j.Save(t.Context(), manifest("stale"), "old")).To(gomega.Succeed())
	j.store.Now = func() time.Time { return time.Now().Add(JobJournalMaxAge + time.Minute) }
	g.Expect(j.Start(quiet(t))).To(gomega.Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(manifest("stale")), &batchv1.Job{}))).To(gomega.BeTrue())
	g.Expect(entryCount(t, at)).To(gomega.BeZero())
}

// Entries are capped in bytes, and written only when they change (pod
// records used to be rewritten, one PUT, on every reconcile).
func TestEntryStore_BoundedInBytesAndWrittenOnlyOnChange(t *testing.T) {
	g := newT(t)
	home := newNamespace(t)
	at := types.NamespacedName{Namespace: home, Name: "reroll-pod-records"}
	c, requests := countingClient(t)
	s := NewEntries(c, c, at, testKey(t, 36), "the pod records")
	e := types.NamespacedName{Namespace: "tenant", Name: "group"}
	g.Expect(s.Put(t.Context(), e, `{"a":"1"}`)).To(gomega.Succeed())
	// Positive control: a change is one write.
	before := requests.writes()
	g.Expect(s.Put(t.Context(), e, `{"a":"2"}`)).To(gomega.Succeed())
	g.Expect(requests.writes()).To(gomega.Equal(before + 1))
	g.Expect(s.Put(t.Context(), e, `{"a":"2"}`)).To(gomega.Succeed())
	g.Expect(requests.writes()).To(gomega.Equal(before+1), "the same value is not written again")

	err := s.Put(t.Context(), e, `{"a":"`+strings.Repeat("x", DefaultMaxEntryBytes)+`"}`)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("over the limit of 262144")))
	v, ok, err := s.Get(t.Context(), e)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(v).To(gomega.Equal(`{"a":"2"}`), "the refused value left the entry as it was")
}
