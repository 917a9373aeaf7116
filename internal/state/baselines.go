package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/baseline"
	"github.com/reroll/reroll/internal/digest"

	"github.com/reroll/reroll/internal/workload"
)

// ErrBaselinesFull is returned by Baselines.Put for an entry that its
// namespace's ConfigMap has no room for (baseline.MaxBytes): the caller
// keeps that baseline on the workload instead, as its record.
var ErrBaselinesFull = errors.New("the namespace's baselines are full")

// Baselines keeps the baselines of workloads Reroll has not written a
// record on (internal/baseline; docs/design.md, "Install: no write per
// workload") in Reroll's own namespace: one ConfigMap per namespace, named
// "<prefix>-<20 hex characters of the SHA-256 of the namespace>", labelled
// with the store and the namespace, each entry signed under the
// installation key and bound to its workload's UID. A tenant therefore
// fills no other namespace's ConfigMap, and an entry Reroll did not sign
// counts as absent and is dropped at the next write.
//
// Writes are batched per namespace (a group commit): a put joins the batch
// that waits for the namespace, the first caller writes it with one update
// (or create) of the ConfigMap, and every caller of the batch returns once
// that write is done, so a baseline is durable before the reconcile that
// decided it ends. Puts made while a write is under way form the next
// batch: N workers putting at once cost about N/batch writes, never one
// per entry when they overlap.
//
// Reads come from memory after one API read of each namespace's ConfigMap:
// Reroll is its only writer (leader election), so what it wrote is what is
// there. It is granted, like the other stores, by the Role in Reroll's
// namespace (get, list, create, update, delete on ConfigMaps).
type Baselines struct {
	// c writes; r reads from the API server (Reroll's namespace may be
	// outside the watched ones).
	c client.Client
	r client.Reader
	// namespace is Reroll's; prefix names the store.
	namespace, prefix string
	// key signs the entries.
	key digest.Key
	// limit bounds the data of one ConfigMap, in bytes; 0 means
	// baseline.MaxBytes.
	limit int

	mu sync.Mutex
	// loaded holds the verified entries of each namespace read or written
	// so far, by data key.
	loaded map[string]map[string]baseline.Entry
	// waiting is the batch of each namespace that waits for the write
	// under way; writing marks the namespaces whose write is under way.
	waiting map[string]*baselineBatch
	writing map[string]bool
}

// baselineBatch is the puts of one namespace written together.
type baselineBatch struct {
	puts []baseline.Entry
	// done is closed once the batch was written (or failed: err).
	done chan struct{}
	err  error
	// refused holds the data keys of puts that did not fit.
	refused map[string]bool
}

// NewBaselines returns the store named at (Reroll's namespace and the
// ConfigMaps' name prefix).
func NewBaselines(c client.Client, r client.Reader, at types.NamespacedName, key digest.Key) *Baselines {
	return &Baselines{c: c, r: r, namespace: at.Namespace, prefix: at.Name, key: key,
		loaded: map[string]map[string]baseline.Entry{}, waiting: map[string]*baselineBatch{}, writing: map[string]bool{}}
}

// configMapName is the name of namespace ns's ConfigMap.
func (s *Baselines) configMapName(ns string) string {
	return baseline.ConfigMapName(s.prefix, ns)
}

// Get returns the baseline record of the workload kind/name with uid in
// namespace ns, and whether there is one (an entry of another uid, or one
// that does not verify, is none).
func (s *Baselines) Get(ctx context.Context, ns, kind, name string, uid types.UID) (string, bool, error) {
	entries, err := s.entries(ctx, ns)
	if err != nil {
		return "", false, err
	}
	e, ok := entries[baseline.DataKey(kind, name)]
	if !ok || e.UID != string(uid) {
		return "", false, nil
	}
	return e.Record, true, nil
}

// entries returns the verified entries of namespace ns, reading its
// ConfigMap from the API server the first time.
func (s *Baselines) entries(ctx context.Context, ns string) (map[string]baseline.Entry, error) {
	s.mu.Lock()
	entries, ok := s.loaded[ns]
	s.mu.Unlock()
	if ok {
		return entries, nil
	}
	var cm corev1.ConfigMap
	err := s.r.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.configMapName(ns)}, &cm)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading the baselines of namespace %s: %w", ns, err)
	}
	if err == nil && cm.Labels[StoreNamespaceLabel] != ns {
		// Another namespace's, or not Reroll's: nothing of it counts.
		cm.Data = nil
	}
	entries, _ = baseline.OpenAll(s.key, s.prefix, ns, cm.Data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.loaded[ns]; ok {
		// A write of this process landed meanwhile: it is newer.
		return cur, nil
	}
	s.loaded[ns] = entries
	return entries, nil
}

// Put writes the entries, all of namespace ns, with other puts of ns made
// at the same time, and returns once they are written. An entry with an
// empty Record removes the workload's. It returns ErrBaselinesFull (wrapped)
// when an entry did not fit, and the API's error when the write failed.
func (s *Baselines) Put(ctx context.Context, ns string, entries ...baseline.Entry) error {
	s.mu.Lock()
	b := s.waiting[ns]
	if b == nil {
		b = &baselineBatch{done: make(chan struct{})}
		s.waiting[ns] = b
	}
	b.puts = append(b.puts, entries...)
	lead := !s.writing[ns]
	if lead {
		s.writing[ns] = true
	}
	s.mu.Unlock()
	if lead {
		s.writeBatches(ctx, ns)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.err != nil {
		return b.err
	}
	for _, e := range entries {
		if b.refused[baseline.DataKey(e.Kind, e.Name)] {
			return fmt.Errorf("keeping the baseline of %s %s/%s: %w", e.Kind, ns, e.Name, ErrBaselinesFull)
		}
	}
	return nil
}

// writeBatches writes the waiting batches of ns one after another until
// none waits; one caller at a time runs it per namespace.
func (s *Baselines) writeBatches(ctx context.Context, ns string) {
	for {
		s.mu.Lock()
		b := s.waiting[ns]
		if b == nil {
			s.writing[ns] = false
			s.mu.Unlock()
			return
		}
		delete(s.waiting, ns)
		s.mu.Unlock()
		b.refused, b.err = s.write(ctx, ns, b.puts)
		close(b.done)
	}
}

// write merges puts into ns's ConfigMap with one create or update (retried
// on a conflict), and returns the data keys of the puts that did not fit.
func (s *Baselines) write(ctx context.Context, ns string, puts []baseline.Entry) (map[string]bool, error) {
	key := client.ObjectKey{Namespace: s.namespace, Name: s.configMapName(ns)}
	var refused []baseline.Entry
	var data map[string]string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := s.r.Get(ctx, key, &cm)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		exists := err == nil
		old := cm.Data
		if exists && cm.Labels[StoreNamespaceLabel] != ns {
			old = nil
		}
		data, refused = baseline.Merge(s.key, s.prefix, ns, old, puts, s.limit)
		cm.Labels = map[string]string{StoreLabel: s.prefix, StoreNamespaceLabel: ns}
		cm.Annotations = map[string]string{StoreEntryAnnotation: ns}
		cm.Data, cm.BinaryData = data, nil
		if !exists {
			cm.Namespace, cm.Name = key.Namespace, key.Name
			err := s.c.Create(ctx, &cm, client.FieldOwner(workload.FieldManager))
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), key.Name, err)
			}
			return err
		}
		return s.c.Update(ctx, &cm, client.FieldOwner(workload.FieldManager))
	})
	if err != nil {
		return nil, fmt.Errorf("writing the baselines of namespace %s to ConfigMap %s: %w", ns, key, err)
	}
	entries, _ := baseline.OpenAll(s.key, s.prefix, ns, data)
	s.mu.Lock()
	s.loaded[ns] = entries
	s.mu.Unlock()
	out := map[string]bool{}
	for _, e := range refused {
		out[baseline.DataKey(e.Kind, e.Name)] = true
	}
	return out, nil
}
