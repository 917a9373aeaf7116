package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"

	"github.com/reroll/reroll/internal/workload"
)

// Labels, annotation and data keys of the ConfigMaps of Entries and Baselines.
const (
	// StoreLabel names the store an entry belongs to (its prefix).
	StoreLabel = "reroll.dev/store"
	// StoreNamespaceLabel is the namespace the entry is about, so that the
	// entries of one namespace are counted with a label selector.
	StoreNamespaceLabel = "reroll.dev/store-namespace"
	// StoreEntryAnnotation is "<namespace>/<name>" of the entry.
	StoreEntryAnnotation = "reroll.dev/store-entry"
	// EntryData holds the entry's value; SignatureData its signature
	// (digest.Key.StateMAC of the store, the entry and the value).
	EntryData     = "entry"
	SignatureData = "signature"
)

// DefaultEntriesPerNamespace bounds the entries one namespace holds in one
// store: the groups of annotated pods of a namespace, the Jobs of a
// namespace being re-created at once.
const DefaultEntriesPerNamespace = 256

// DefaultMaxEntryBytes bounds the value of one entry, in bytes: 256 KiB. A
// namespace thus holds at most DefaultEntriesPerNamespace ×
// DefaultMaxEntryBytes (64 MiB) in one store, and reading an entry costs at
// most that much. A larger value is refused, before anything is written.
const DefaultMaxEntryBytes = 256 << 10

// Entries is a store of signed entries: it keeps one kind of Reroll's state (the Job journal, the
// records of annotated pods) in Reroll's own namespace, as one ConfigMap
// per entry: named "<prefix>-<20 hex characters of the SHA-256 of the
// entry>", labelled with the store and the entry's namespace, the entry's
// value and its signature as data. A tenant therefore fills no one else's
// entries; each namespace holds at most PerNamespace entries (each at most
// a ConfigMap's 1 MiB); a reconcile reads and writes only its own entry,
// never the whole store. An entry whose signature does not verify under the
// installation key (written by someone else, or by an older Reroll) is
// ignored and deleted: Reroll acts only on what it wrote itself.
//
// It is granted by the chart's and config/rbac's Role in Reroll's
// namespace: get, list, create, update and delete on ConfigMaps there
// (names are generated, so RBAC cannot list them), not by the base
// ClusterRole.
type Entries struct {
	// c writes; r reads from the API server (Reroll's namespace may be
	// outside the watched ones).
	c client.Client
	r client.Reader
	// namespace is Reroll's; prefix names the store (--job-journal,
	// --pod-records).
	namespace, prefix string
	// key signs the entries.
	key digest.Key
	// PerNamespace bounds the entries of one namespace; 0 means
	// DefaultEntriesPerNamespace.
	PerNamespace int
	// MaxBytes bounds the value of one entry; 0 means DefaultMaxEntryBytes.
	MaxBytes int
	// MaxAge, when set, is how long an entry lives after its ConfigMap was
	// created (a time the API server sets, which no writer can forge); an
	// older one is deleted unread.
	MaxAge time.Duration
	// Now is the clock of MaxAge; nil means time.Now.
	Now func() time.Time
	// what names the store in errors ("the Job journal").
	what string
}

// NewEntries returns the store named at (--job-journal, --pod-records:
// Reroll's namespace and the prefix).
func NewEntries(c client.Client, r client.Reader, at types.NamespacedName, key digest.Key, what string) *Entries {
	return &Entries{c: c, r: r, namespace: at.Namespace, prefix: at.Name, key: key, what: what}
}

// configMapName is the name of the ConfigMap of entry e.
func (s *Entries) configMapName(e types.NamespacedName) string {
	sum := sha256.Sum256([]byte(e.String()))
	return s.prefix + "-" + hex.EncodeToString(sum[:10])
}

func (s *Entries) sign(e types.NamespacedName, value string) string {
	return s.key.StateMAC(s.prefix, e.String(), value)
}

// verify returns the value of cm, the ConfigMap of entry e, when Reroll
// signed it for e.
func (s *Entries) verify(e types.NamespacedName, cm *corev1.ConfigMap) (string, bool) {
	v, ok := cm.Data[EntryData]
	if !ok || cm.Annotations[StoreEntryAnnotation] != e.String() {
		return "", false
	}
	ok, _ = s.key.VerifyStateMAC(s.prefix, e.String(), v, cm.Data[SignatureData])
	return v, ok
}

// Get returns entry e's value; ok is false when there is none, or when it
// is not Reroll's (it is then deleted).
func (s *Entries) Get(ctx context.Context, e types.NamespacedName) (string, bool, error) {
	var cm corev1.ConfigMap
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.configMapName(e)}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("reading %s of %s: %w", s.what, e, err)
	}
	if s.expired(&cm) {
		return "", false, s.expire(ctx, &cm)
	}
	v, ok := s.verify(e, &cm)
	if !ok {
		return "", false, s.drop(ctx, &cm)
	}
	if cm.Data[SignatureData] != s.sign(e, v) {
		// Signed before the v2 key derivation: signed again on first
		// read, before its deadline.
		if err := s.Put(ctx, e, v); err != nil {
			return "", false, err
		}
	}
	return v, true, nil
}

// expired reports whether the entry whose ConfigMap has obj's metadata is
// older than MaxAge.
func (s *Entries) expired(obj metav1.Object) bool {
	if s.MaxAge <= 0 {
		return false
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().Sub(obj.GetCreationTimestamp().Time) > s.MaxAge
}

// expire deletes the ConfigMap of obj's metadata, an entry older than
// MaxAge.
func (s *Entries) expire(ctx context.Context, obj metav1.Object) error {
	ctrl.LoggerFrom(ctx).Info("Deleting an expired entry", "store", s.what, "configMap", obj.GetName(), "entry", obj.GetAnnotations()[StoreEntryAnnotation], "maxAge", s.MaxAge.String())
	return s.deleteConfigMap(ctx, obj, "expired")
}

// deleteConfigMap deletes the ConfigMap of obj's metadata, if it still has
// obj's UID; why names it in the error.
func (s *Entries) deleteConfigMap(ctx context.Context, obj metav1.Object, why string) error {
	uid := obj.GetUID()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: obj.GetName()}}
	if err := s.c.Delete(ctx, cm, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s entry %s of %s: %w", why, obj.GetName(), s.what, err)
	}
	return nil
}

// drop deletes cm, an entry Reroll did not sign.
func (s *Entries) drop(ctx context.Context, cm *corev1.ConfigMap) error {
	ctrl.LoggerFrom(ctx).Info("Deleting an entry Reroll did not write (no valid signature)", "store", s.what, "configMap", cm.Name)
	if err := s.c.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting unsigned entry %s of %s: %w", cm.Name, s.what, err)
	}
	return nil
}

// Put writes entry e; "" deletes it. A value over MaxBytes is refused; so
// is a new entry when e's namespace holds PerNamespace entries already. An
// entry that already holds value, signed, is not written again.
func (s *Entries) Put(ctx context.Context, e types.NamespacedName, value string) error {
	if value == "" {
		return s.Delete(ctx, e)
	}
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxEntryBytes
	}
	if len(value) > limit {
		return fmt.Errorf("writing %s of %s: the entry is %d bytes, over the limit of %d", s.what, e, len(value), limit)
	}
	key := client.ObjectKey{Namespace: s.namespace, Name: s.configMapName(e)}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := s.r.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			if err := s.room(ctx, e.Namespace); err != nil {
				return err
			}
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels:      map[string]string{StoreLabel: s.prefix, StoreNamespaceLabel: e.Namespace},
				Annotations: map[string]string{StoreEntryAnnotation: e.String()}},
				Data: map[string]string{EntryData: value, SignatureData: s.sign(e, value)}}
			if err := s.c.Create(ctx, &cm, client.FieldOwner(workload.FieldManager)); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), key.Name, err)
			} else {
				return err
			}
		}
		if err != nil {
			return err
		}
		// Signed before the v2 key derivation: written again, signed anew.
		current := cm.Data[SignatureData] == s.sign(e, value)
		if v, ok := s.verify(e, &cm); ok && current && v == value && cm.Labels[StoreLabel] == s.prefix &&
			cm.Labels[StoreNamespaceLabel] == e.Namespace && len(cm.Data) == 2 && len(cm.BinaryData) == 0 {
			return nil
		}
		cm.Labels = map[string]string{StoreLabel: s.prefix, StoreNamespaceLabel: e.Namespace}
		cm.Annotations = map[string]string{StoreEntryAnnotation: e.String()}
		cm.Data = map[string]string{EntryData: value, SignatureData: s.sign(e, value)}
		cm.BinaryData = nil
		return s.c.Update(ctx, &cm, client.FieldOwner(workload.FieldManager))
	})
	if err != nil {
		return fmt.Errorf("writing %s of %s: %w", s.what, e, err)
	}
	return nil
}

// room returns an error when namespace holds PerNamespace entries already.
func (s *Entries) room(ctx context.Context, namespace string) error {
	limit := s.PerNamespace
	if limit <= 0 {
		limit = DefaultEntriesPerNamespace
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := s.r.List(ctx, &list, client.InNamespace(s.namespace),
		client.MatchingLabels{StoreLabel: s.prefix, StoreNamespaceLabel: namespace}); err != nil {
		return fmt.Errorf("counting the entries of namespace %s in %s: %w", namespace, s.what, err)
	}
	if len(list.Items) >= limit {
		return fmt.Errorf("namespace %s holds %d entries in %s, the most one namespace may", namespace, len(list.Items), s.what)
	}
	return nil
}

// Delete removes entry e; a missing one is fine.
func (s *Entries) Delete(ctx context.Context, e types.NamespacedName) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.configMapName(e)}}
	if err := s.c.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s of %s: %w", s.what, e, err)
	}
	return nil
}

// listPage is how many entries one LIST of the store's metadata returns.
const listPage = 500

// Names returns the entry of every ConfigMap of the store, read as
// metadata only, in pages of listPage: its values are read one at a time
// (Get), so that reading the store never holds more than one value. A
// ConfigMap whose name is not its entry's is deleted, and so is an expired
// one.
func (s *Entries) Names(ctx context.Context) ([]types.NamespacedName, error) {
	var out []types.NamespacedName
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	for {
		if err := s.r.List(ctx, &list, client.InNamespace(s.namespace), client.MatchingLabels{StoreLabel: s.prefix},
			client.Limit(listPage), client.Continue(list.Continue)); err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.what, err)
		}
		for i := range list.Items {
			m := &list.Items[i]
			ns, name, _ := strings.Cut(m.Annotations[StoreEntryAnnotation], "/")
			e := types.NamespacedName{Namespace: ns, Name: name}
			switch {
			case s.configMapName(e) != m.Name:
				ctrl.LoggerFrom(ctx).Info("Deleting an entry Reroll did not write (not in its place)", "store", s.what, "configMap", m.Name)
				if err := s.deleteConfigMap(ctx, m, "misplaced"); err != nil {
					return nil, err
				}
			case s.expired(m):
				if err := s.expire(ctx, m); err != nil {
					return nil, err
				}
			default:
				out = append(out, e)
			}
		}
		if list.Continue == "" {
			return out, nil
		}
	}
}
