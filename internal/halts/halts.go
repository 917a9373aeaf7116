package halts

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
)

// LabelKey labels each ConfigMap of halt records with its prefix
// (--change-sets): the watch selects them by it.
const LabelKey = "reroll.dev/halt-records"

// DataKey is the data key of a record's JSON (delivery.Halt).
const DataKey = "halt"

// ReasonForgedRecord is the Warning Event on a ConfigMap of halt records
// whose record Reroll did not sign (Verify): it is ignored, holds nothing,
// and is overwritten when its set halts.
const ReasonForgedRecord = "ForgedHaltRecord"

// SyncTimeout bounds how long a read waits for the watch's first list:
// without the permission it never comes, and the read fails with an error
// that says so instead of hanging.
const SyncTimeout = 30 * time.Second

// writtenTTL bounds how long what this process wrote stands in for the
// watch's copy: the watch sees a write within a second; an operator who
// deletes a record meanwhile must not be overruled for long.
const writtenTTL = time.Minute

// Name is the name of the ConfigMap of set id's halt record, under prefix.
func Name(prefix, id string) string { return prefix + "-" + id }

// Selector selects the ConfigMaps of halt records under prefix.
func Selector(prefix string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelKey: prefix})
}

// Records are the halt records under one prefix in one namespace. Start
// runs their watch (manager.Runnable, in every replica); Get reads them from
// it; Record writes one; Expire deletes those no longer needed.
type Records struct {
	// c writes; r reads from the API server before a write (the watch may
	// lag).
	c            client.Client
	r            client.Reader
	namespace    string
	prefix       string
	fieldManager string
	// key signs the records written and verifies those read.
	key digest.Key
	inf toolscache.SharedIndexInformer

	// Recorder, when set, gets a ReasonForgedRecord Warning Event on each
	// ConfigMap whose record does not verify (once per version seen).
	Recorder record.EventRecorder

	mu sync.Mutex
	// parsed are the records parsed from the watch, by ConfigMap name.
	parsed map[string]parsedRecord
	// written are what this process last wrote, by set ID.
	written map[string]writtenRecord
}

type parsedRecord struct {
	rv   string
	halt *delivery.Halt
}

type writtenRecord struct {
	halt *delivery.Halt
	rv   string
	at   time.Time
}

// New returns the records of the ConfigMaps labelled LabelKey=at.Name in
// namespace at.Namespace, watched through cfg, written with c (as
// fieldManager) after a read with r (the API server), signed and verified
// under the installation key k.
func New(cfg *rest.Config, c client.Client, r client.Reader, at types.NamespacedName, fieldManager string, k digest.Key) (*Records, error) {
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the halt records %s: %w", at, err)
	}
	byLabel := func(o *metav1.ListOptions) { o.LabelSelector = Selector(at.Name).String() }
	lw := toolscache.NewFilteredListWatchFromClient(cs.RESTClient(), "configmaps", at.Namespace, byLabel)
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	return &Records{c: c, r: r, namespace: at.Namespace, prefix: at.Name, fieldManager: fieldManager, key: k, inf: inf,
		parsed: map[string]parsedRecord{}, written: map[string]writtenRecord{}}, nil
}

// Start runs the watch until ctx is done (manager.Runnable).
func (s *Records) Start(ctx context.Context) error {
	s.inf.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica watches, so a new leader starts with the halts in hand (and the
// metric reads them).
func (s *Records) NeedLeaderElection() bool { return false }

// synced waits for the watch's first list, at most SyncTimeout.
func (s *Records) synced(ctx context.Context) error {
	if s.inf.HasSynced() {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(wait.Done(), s.inf.HasSynced) {
		return fmt.Errorf("the watch of the halt records (ConfigMaps labelled %s=%s in %s) has not synced (list and watch on ConfigMaps there allowed?): %w", LabelKey, s.prefix, s.namespace, context.Cause(wait))
	}
	return nil
}

// ID returns the set ID of the halt record in cm, and whether cm is one of
// prefix's.
func ID(prefix string, cm *corev1.ConfigMap) (string, bool) {
	id, ok := strings.CutPrefix(cm.Name, prefix+"-")
	return id, ok && id != "" && cm.Labels[LabelKey] == prefix
}

// Get returns the halt records by set ID, shared (read-only), from the
// watch: no API request. It waits for the watch's first list, at most
// SyncTimeout. Only the records Reroll signed count (Verify), with an
// operator's resume applied; a damaged or unsigned one is skipped, with a
// log line and a ReasonForgedRecord Warning Event on its ConfigMap.
func (s *Records) Get(ctx context.Context) (map[string]*delivery.Halt, error) {
	if err := s.synced(ctx); err != nil {
		return nil, err
	}
	items := s.inf.GetStore().List()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*delivery.Halt, len(items))
	rvs := make(map[string]string, len(items))
	live := make(map[string]bool, len(items))
	for _, item := range items {
		cm, ok := item.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		id, ok := ID(s.prefix, cm)
		if !ok {
			continue
		}
		live[cm.Name] = true
		rvs[id] = cm.ResourceVersion
		if p, ok := s.parsed[cm.Name]; ok && p.rv == cm.ResourceVersion {
			if p.halt != nil {
				out[id] = p.halt
			}
			continue
		}
		h, err := Verify(s.key, cm)
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("Ignoring a halt record Reroll did not sign, or cannot read", "changeSet", id, "configMap", cm.Name, "error", err.Error())
			if s.Recorder != nil {
				s.Recorder.Eventf(cm, corev1.EventTypeWarning, ReasonForgedRecord, "Ignoring the halt record of change set %s: %s; it holds nothing, and is overwritten if the set halts", id, err.Error())
			}
			h = nil
		}
		s.parsed[cm.Name] = parsedRecord{rv: cm.ResourceVersion, halt: h}
		if h != nil {
			out[id] = h
		}
	}
	for name := range s.parsed {
		if !live[name] {
			delete(s.parsed, name)
		}
	}
	for id, w := range s.written {
		if seen(rvs[id], w.rv) || time.Since(w.at) >= writtenTTL {
			delete(s.written, id)
			continue
		}
		out[id] = w.halt
	}
	return out, nil
}

// seen reports whether the watch's copy at resourceVersion rv ("" for
// none) includes the write that made resourceVersion written: rv is the
// same or later. Kubernetes compares resourceVersions of one resource as
// integers (KEP-5504); ones that do not compare count as seen, so the
// watch's copy wins, as it would without this.
func seen(rv, written string) bool {
	switch {
	case rv == written:
		return true
	case rv == "":
		// The watch has not seen the ConfigMap created.
		return false
	}
	n, err := resourceversion.CompareResourceVersion(rv, written)
	return err != nil || n >= 0
}

// Record writes halt h of set id, bounded (delivery.Halt.Bounded) and
// signed (ConfigMap), in the set's own ConfigMap, unless the set is halted
// already by a record Reroll signed (one it did not sign is overwritten),
// and keeps what it wrote until the watch has seen it; it reports whether
// it wrote.
func (s *Records) Record(ctx context.Context, id string, h delivery.Halt) (bool, error) {
	h = h.Bounded()
	want := ConfigMap(s.key, s.namespace, s.prefix, id, h)
	key := types.NamespacedName{Namespace: s.namespace, Name: want.Name}
	wrote := false
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wrote = false
		var cm corev1.ConfigMap
		err := s.r.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			cm = *want.DeepCopy()
			err := s.c.Create(ctx, &cm, client.FieldOwner(s.fieldManager))
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), key.Name, err)
			}
			wrote, rv = err == nil, cm.ResourceVersion
			return err
		}
		if err != nil {
			return err
		}
		if old, err := Verify(s.key, &cm); err == nil && old.Active() {
			return nil // another reconcile halted it first
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[LabelKey] = s.prefix
		// The signed record alone: an earlier resume beside it goes.
		cm.Data = want.Data
		err = s.c.Update(ctx, &cm, client.FieldOwner(s.fieldManager))
		wrote, rv = err == nil, cm.ResourceVersion
		return err
	})
	if err != nil {
		return false, fmt.Errorf("writing the halt record %s of change set %s: %w", key, id, err)
	}
	if wrote {
		s.mu.Lock()
		s.written[id] = writtenRecord{halt: &h, rv: rv, at: time.Now()}
		s.mu.Unlock()
	}
	return wrote, nil
}

// Expire deletes the records of the sets that live reports no workload
// names any more (superseded by a newer content, or resumed and rolled
// on), as seen by the watch; each delete is guarded by the record's
// resourceVersion, so a record written meanwhile stays. It returns how many
// it deleted.
func (s *Records) Expire(ctx context.Context, live func(id string) (bool, error)) (int, error) {
	if err := s.synced(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, item := range s.inf.GetStore().List() {
		cm, ok := item.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		id, ok := ID(s.prefix, cm)
		if !ok {
			continue
		}
		named, err := live(id)
		if err != nil {
			return n, err
		}
		if named {
			continue
		}
		err = s.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}},
			client.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("deleting the halt record %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		n++
	}
	return n, nil
}
