package halts

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/delivery"
)

// SyncTimeout bounds how long a read waits for the watch's first list:
// without the permission it never comes, and the read fails with an error
// that says so instead of hanging.
const SyncTimeout = 30 * time.Second

// writtenTTL bounds how long what this process wrote stands in for the
// watch's copy: the watch sees a write within a second; an operator who
// deletes the ConfigMap meanwhile must not be overruled for long.
const writtenTTL = time.Minute

// Records are the halt records in ConfigMap Key. Start runs their watch
// (manager.Runnable, in every replica); Get reads them from it; Record
// writes one.
type Records struct {
	// c writes; r reads from the API server before a write (the watch may
	// lag).
	c            client.Client
	r            client.Reader
	key          types.NamespacedName
	fieldManager string
	inf          toolscache.SharedIndexInformer

	mu sync.Mutex
	// halts are the records parsed from the watched ConfigMap at version
	// rv ("" when there is none); parsed says they were.
	halts  map[string]*delivery.Halt
	rv     string
	parsed bool
	// written is what this process last wrote, at resourceVersion
	// writtenRV, at writtenAt.
	written   map[string]*delivery.Halt
	writtenRV string
	writtenAt time.Time
}

// New returns the records of ConfigMap key, watched through cfg, written
// with c (as fieldManager) after a read with r (the API server).
func New(cfg *rest.Config, c client.Client, r client.Reader, key types.NamespacedName, fieldManager string) (*Records, error) {
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", key, err)
	}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
	}
	lw := toolscache.NewFilteredListWatchFromClient(cs.RESTClient(), "configmaps", key.Namespace, byName)
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	return &Records{c: c, r: r, key: key, fieldManager: fieldManager, inf: inf}, nil
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

// Get returns the halt records by set ID, shared (read-only), from the
// watch: no API request. It waits for the watch's first list, at most
// SyncTimeout.
func (s *Records) Get(ctx context.Context) (map[string]*delivery.Halt, error) {
	cm, err := s.configMap(ctx)
	if err != nil {
		return nil, err
	}
	rv := ""
	if cm != nil {
		rv = cm.ResourceVersion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		if !seen(rv, s.writtenRV) && time.Since(s.writtenAt) < writtenTTL {
			return s.written, nil
		}
		s.written, s.writtenRV = nil, ""
	}
	if s.parsed && rv == s.rv {
		return s.halts, nil
	}
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	s.halts, s.rv, s.parsed = parse(ctx, data), rv, true
	return s.halts, nil
}

// configMap returns the watched ConfigMap, shared with the informer, or nil
// when it does not exist.
func (s *Records) configMap(ctx context.Context) (*corev1.ConfigMap, error) {
	if !s.inf.HasSynced() {
		wait, cancel := context.WithTimeout(ctx, SyncTimeout)
		defer cancel()
		if !toolscache.WaitForCacheSync(wait.Done(), s.inf.HasSynced) {
			return nil, fmt.Errorf("the watch of the halt records %s has not synced (list and watch on that ConfigMap allowed?): %w", s.key, context.Cause(wait))
		}
	}
	item, ok, err := s.inf.GetStore().GetByKey(s.key.Namespace + "/" + s.key.Name)
	if err != nil || !ok {
		return nil, err
	}
	cm, _ := item.(*corev1.ConfigMap)
	return cm, nil
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

// parse reads the halt records of data, skipping (with a log line) the
// damaged ones.
func parse(ctx context.Context, data map[string]string) map[string]*delivery.Halt {
	halts := map[string]*delivery.Halt{}
	for id, v := range data {
		h, err := delivery.ParseHalt(v)
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("Ignoring a damaged halt record", "changeSet", id, "error", err.Error())
			continue
		}
		halts[id] = h
	}
	return halts
}

// Record writes halt h of set id, unless the set is halted already, and
// keeps what it wrote until the watch has seen it; it reports whether it
// wrote.
func (s *Records) Record(ctx context.Context, id string, h delivery.Halt) (bool, error) {
	wrote := false
	var data map[string]string
	rv, err := s.update(ctx, func(d map[string]string) {
		wrote = false
		if old, ok := d[id]; ok {
			if o, err := delivery.ParseHalt(old); err == nil && o.Active() {
				return // another reconcile halted it first
			}
		}
		d[id] = h.String()
		wrote, data = true, d
	})
	if err != nil || !wrote {
		return false, err
	}
	s.mu.Lock()
	s.written, s.writtenRV, s.writtenAt = parse(ctx, data), rv, time.Now()
	s.mu.Unlock()
	return true, nil
}

// update applies change to the ConfigMap's data, creating the ConfigMap
// when it is absent and retrying on conflicts (every write is guarded by
// resourceVersion); it returns the resourceVersion written.
func (s *Records) update(ctx context.Context, change func(map[string]string)) (string, error) {
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := s.r.Get(ctx, s.key, &cm)
		if apierrors.IsNotFound(err) {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.key.Namespace, Name: s.key.Name}, Data: map[string]string{}}
			change(cm.Data)
			err := s.c.Create(ctx, &cm, client.FieldOwner(s.fieldManager))
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), s.key.Name, err)
			}
			rv = cm.ResourceVersion
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm.Data)
		err = s.c.Update(ctx, &cm, client.FieldOwner(s.fieldManager))
		rv = cm.ResourceVersion
		return err
	})
	if err != nil {
		return "", fmt.Errorf("writing the change sets' halt records %s: %w", s.key, err)
	}
	return rv, nil
}
