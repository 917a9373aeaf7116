package digest

import (
	"crypto/sha1" //nolint:gosec // Reloader's hash; see ReloaderSHA1OfConfigMap.
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Object is what Reroll's informers keep of one ConfigMap or Secret: its
// name, namespace, UID, resourceVersion and annotations (without
// kubectl.kubernetes.io/last-applied-configuration), the digest of each key
// of data and binaryData, and the object's Reloader SHA-1. Values, labels,
// owner references, managedFields and the rest of the metadata are dropped.
//
// It exists for memory: a typed Secret in an informer costs about 1.1 KiB
// after its values are replaced by digests (320 B of struct, a map of ~400 B
// for two keys, strings), an Object about 200 B for one key, and in a
// cluster of 100,000 Secrets that difference is most of Reroll's heap
// (docs/benchmarks.md, the xl profile). Everything but the name, the
// namespace and the annotations is packed into one string: the UID and the
// resourceVersion, each preceded by its length (uvarint), 20 bytes of
// SHA-1, then per key, in key order, the key's length (uvarint), the key
// and 32 bytes of digest.
//
// Object implements client.Object so that client-go's informers can key and
// index it and controller-runtime's event handlers and predicates can take
// it. Of the metav1.Object getters only name, namespace, UID,
// resourceVersion and annotations return what the object had; the others
// return zero values, and their setters do nothing. An Object is shared by
// the informer's store and every reader: treat it as read-only.
type Object struct {
	name, namespace string
	annotations     map[string]string
	// packed is the UID, resourceVersion and digests, as described above.
	packed string
	// created is the object's creationTimestamp and changed the API
	// server's time of the last write of its data after its creation (0:
	// none known), both in Unix seconds (uint32 lasts until 2106): the
	// first-sight rule's history (see History). Two uint32 keep the struct
	// at 64 bytes, the size class it had without them.
	created, changed uint32
}

var _ metav1.Object = (*Object)(nil)
var _ runtime.Object = (*Object)(nil)

// sha1Size and digestSize are the byte lengths of the packed digests.
const (
	sha1Size   = sha1.Size
	digestSize = sha256.Size
)

// newObject returns the Object of meta, of kind ("ConfigMap" or
// "Secret"), with the digests of values (raw bytes by key, of data and
// binaryData together) under k (Key.Digest), and reloaderSHA1, Reloader's
// SHA-1 of the whole object as lowercase hex.
func newObject(meta metav1.Object, kind string, values map[string][]byte, reloaderSHA1 string, k Key) *Object {
	o := &Object{name: meta.GetName(), namespace: meta.GetNamespace()}
	if a := meta.GetAnnotations(); len(a) > 0 {
		delete(a, lastAppliedAnnotation)
		if len(a) > 0 {
			o.annotations = a
		}
	}
	uid, rv := string(meta.GetUID()), meta.GetResourceVersion()
	names := slices.Sorted(maps.Keys(values))
	size := 2*binary.MaxVarintLen64 + len(uid) + len(rv) + sha1Size
	for _, n := range names {
		size += binary.MaxVarintLen64 + len(n) + digestSize
	}
	b := make([]byte, 0, size)
	b = appendString(b, uid)
	b = appendString(b, rv)
	sum, _ := hex.DecodeString(reloaderSHA1) // always 40 hex characters
	b = append(b, sum...)
	h := k.hash()
	for _, n := range names {
		b = appendString(b, n)
		h.Reset()
		k.place(h, kind, o.namespace, o.name, n)
		h.Write(values[n])
		b = h.Sum(b)
	}
	o.packed = string(b)
	created, changed := HistoryOf(meta)
	o.created, o.changed = unixSeconds(created), unixSeconds(changed)
	return o
}

// HistoryOf returns what a ConfigMap or Secret read from the API says of
// its past (plan.History): its creation time and the time of its latest
// data change after its creation (zero when none is known), in whole
// seconds, UTC. A data write in a later second than the creation is a
// change; one in the second of the creation cannot be told from the
// creation here (the store, which sees each change live, can: SinceChange).
func HistoryOf(meta metav1.Object) (created, changed time.Time) {
	c := unixSeconds(meta.GetCreationTimestamp().Time)
	if c == 0 {
		return time.Time{}, time.Time{}
	}
	created = time.Unix(int64(c), 0).UTC()
	if w := unixSeconds(DataWrittenAt(meta.GetManagedFields())); w > c {
		changed = time.Unix(int64(w), 0).UTC()
	}
	return created, changed
}

// unixSeconds is t in Unix seconds, 0 for the zero time or a time outside
// uint32.
func unixSeconds(t time.Time) uint32 {
	if t.IsZero() || t.Unix() <= 0 || t.Unix() > math.MaxUint32 {
		return 0
	}
	return uint32(t.Unix())
}

// DataWrittenAt returns the latest time among the managedFields entries
// that own data or binaryData of a ConfigMap or Secret (or a Secret's
// stringData, which is stored as data): an upper bound of the time
// its data was last written, at the API server's one-second resolution.
// A write by another field manager that owns no data (a label-only write)
// does not move it; one by a manager that also owns data does, since an
// entry's time is the time of that manager's latest change of any field.
// It returns the zero time when no entry owns data.
func DataWrittenAt(entries []metav1.ManagedFieldsEntry) time.Time {
	var latest time.Time
	for _, e := range entries {
		if e.Time == nil || e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(e.FieldsV1.Raw, &top) != nil {
			continue
		}
		_, data := top["f:data"]
		_, binary := top["f:binaryData"]
		_, str := top["f:stringData"]
		if (data || binary || str) && e.Time.After(latest) {
			latest = e.Time.Time
		}
	}
	return latest
}

// History is what an Object says of its past, for the first-sight rule
// (plan.History): its creation time and the time of its latest data change
// since its creation (zero when none is known), in whole seconds, UTC. Its
// resourceVersion is an upper bound of the revision of both.
func (o *Object) History() (created, changed time.Time) {
	if o.created != 0 {
		created = time.Unix(int64(o.created), 0).UTC()
	}
	if o.changed != 0 {
		changed = time.Unix(int64(o.changed), 0).UTC()
	}
	return created, changed
}

// SinceChange sets, on o freshly made by Transform, the data change history
// from prev, the Object the store held for the same key before this write:
// the same UID and the same digests carry prev's change time forward (a
// write of labels or annotations is no data change, whoever made it);
// different digests are a data change seen live, timed by the API server's
// managedFields (o's own time, else now, else its creation). A different
// UID is a new object. o must not be shared yet.
func (o *Object) SinceChange(prev *Object, now time.Time) {
	if prev == nil || prev.GetUID() != o.GetUID() {
		return
	}
	pp, _ := split(prev.packed)
	op, _ := split(o.packed)
	if pp.digests == op.digests {
		o.changed = prev.changed
		return
	}
	if o.changed == 0 {
		// Written in the second of its creation (managedFields cannot tell
		// that write from the creation), or without managedFields: the
		// change is seen live, so it is about now.
		o.changed = max(o.created, unixSeconds(now))
	}
	o.changed = max(o.changed, prev.changed)
}

// appendString appends s to b, preceded by its length as a uvarint.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// errPacked is returned by unpack for a packed string newObject never makes.
var errPacked = errors.New("malformed packed digests")

// readString reads what appendString appended at the start of p, and
// returns it (a substring of p, no copy) and the rest of p.
func readString(p string) (s, rest string, err error) {
	n, w := binary.Uvarint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
	if w <= 0 || uint64(len(p)-w) < n {
		return "", "", errPacked
	}
	return p[w : w+int(n)], p[w+int(n):], nil
}

// packed is the content of a packed string.
type packed struct {
	uid, resourceVersion string
	// digests is the rest: the SHA-1, then the keys.
	digests string
}

// split reads the UID and resourceVersion of p.
func split(p string) (packed, error) {
	uid, rest, err := readString(p)
	if err != nil {
		return packed{}, err
	}
	rv, rest, err := readString(rest)
	if err != nil {
		return packed{}, err
	}
	return packed{uid: uid, resourceVersion: rv, digests: rest}, nil
}

// Data returns the object's digests: Keys maps each key to its digest as
// lowercase hex (64 characters), never nil; ReloaderSHA1 is lowercase hex.
func (o *Object) Data() Data {
	d, _ := unpack(o.packed) // Object only holds what newObject packed
	return d
}

// unpack reads the digests of a packed string. Every key name and hex
// digest is a substring of one string built for them all: an object of n
// keys costs three allocations, not 3n+3 (BenchmarkObjectData), at each
// reconcile that reads it.
func unpack(p string) (Data, error) {
	pk, err := split(p)
	if err != nil {
		return Data{Keys: map[string]string{}}, err
	}
	rest := pk.digests
	if len(rest) < sha1Size {
		return Data{Keys: map[string]string{}}, errPacked
	}
	// First the size of that string and the number of keys, checking the
	// packing.
	n, size := 0, 2*sha1Size
	for r := rest[sha1Size:]; len(r) > 0; n++ {
		name, after, err := readString(r)
		if err != nil {
			return Data{Keys: map[string]string{}}, err
		}
		if len(after) < digestSize {
			return Data{Keys: map[string]string{}}, errPacked
		}
		size += len(name) + 2*digestSize
		r = after[digestSize:]
	}
	var b strings.Builder
	b.Grow(size)
	var hexBuf [2 * digestSize]byte
	b.Write(hex.AppendEncode(hexBuf[:0], []byte(rest[:sha1Size])))
	for r := rest[sha1Size:]; len(r) > 0; {
		name, after, _ := readString(r)
		b.WriteString(name)
		b.Write(hex.AppendEncode(hexBuf[:0], []byte(after[:digestSize])))
		r = after[digestSize:]
	}
	all := b.String()
	d := Data{Keys: make(map[string]string, n), ReloaderSHA1: all[:2*sha1Size]}
	at := 2 * sha1Size
	for r := rest[sha1Size:]; len(r) > 0; {
		name, after, _ := readString(r)
		d.Keys[all[at:at+len(name)]] = all[at+len(name) : at+len(name)+2*digestSize]
		at += len(name) + 2*digestSize
		r = after[digestSize:]
	}
	return d, nil
}

// repack returns p with the UID and resourceVersion replaced.
func repack(p, uid, resourceVersion string) string {
	pk, _ := split(p)
	b := make([]byte, 0, len(p)+len(uid)+len(resourceVersion))
	b = appendString(b, uid)
	b = appendString(b, resourceVersion)
	return string(append(b, pk.digests...))
}

// GetObjectKind implements runtime.Object: an Object carries no API
// version or kind; the informer that holds it says which.
func (o *Object) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (o *Object) DeepCopyObject() runtime.Object {
	c := *o
	c.annotations = maps.Clone(o.annotations)
	return &c
}

// String returns "namespace/name".
func (o *Object) String() string { return o.namespace + "/" + o.name }

// MarshalLog implements logr.Marshaler: a log line that names an Object
// shows its namespace and name, never the packed digests.
func (o *Object) MarshalLog() any {
	return struct{ Namespace, Name string }{o.namespace, o.name}
}

// GetName implements metav1.Object.
func (o *Object) GetName() string { return o.name }

// SetName implements metav1.Object.
func (o *Object) SetName(name string) { o.name = name }

// GetNamespace implements metav1.Object.
func (o *Object) GetNamespace() string { return o.namespace }

// SetNamespace implements metav1.Object.
func (o *Object) SetNamespace(namespace string) { o.namespace = namespace }

// GetUID implements metav1.Object.
func (o *Object) GetUID() types.UID {
	pk, _ := split(o.packed)
	return types.UID(pk.uid)
}

// SetUID implements metav1.Object.
func (o *Object) SetUID(uid types.UID) {
	o.packed = repack(o.packed, string(uid), o.GetResourceVersion())
}

// GetResourceVersion implements metav1.Object.
func (o *Object) GetResourceVersion() string {
	pk, _ := split(o.packed)
	return pk.resourceVersion
}

// SetResourceVersion implements metav1.Object.
func (o *Object) SetResourceVersion(version string) {
	o.packed = repack(o.packed, string(o.GetUID()), version)
}

// GetAnnotations implements metav1.Object.
func (o *Object) GetAnnotations() map[string]string { return o.annotations }

// SetAnnotations implements metav1.Object.
func (o *Object) SetAnnotations(annotations map[string]string) { o.annotations = annotations }

// The metadata an Object does not keep: zero values, and setters that do
// nothing.

// GetGenerateName implements metav1.Object; always "".
func (o *Object) GetGenerateName() string { return "" }

// SetGenerateName implements metav1.Object; it does nothing.
func (o *Object) SetGenerateName(string) {}

// GetGeneration implements metav1.Object; always 0 (ConfigMaps and Secrets
// have no generation).
func (o *Object) GetGeneration() int64 { return 0 }

// SetGeneration implements metav1.Object; it does nothing.
func (o *Object) SetGeneration(int64) {}

// GetSelfLink implements metav1.Object; always "".
func (o *Object) GetSelfLink() string { return "" }

// SetSelfLink implements metav1.Object; it does nothing.
func (o *Object) SetSelfLink(string) {}

// GetCreationTimestamp implements metav1.Object; always zero.
func (o *Object) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp implements metav1.Object; it does nothing.
func (o *Object) SetCreationTimestamp(metav1.Time) {}

// GetDeletionTimestamp implements metav1.Object; always nil.
func (o *Object) GetDeletionTimestamp() *metav1.Time { return nil }

// SetDeletionTimestamp implements metav1.Object; it does nothing.
func (o *Object) SetDeletionTimestamp(*metav1.Time) {}

// GetDeletionGracePeriodSeconds implements metav1.Object; always nil.
func (o *Object) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements metav1.Object; it does nothing.
func (o *Object) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels implements metav1.Object; always nil (labels are not kept).
func (o *Object) GetLabels() map[string]string { return nil }

// SetLabels implements metav1.Object; it does nothing.
func (o *Object) SetLabels(map[string]string) {}

// GetFinalizers implements metav1.Object; always nil.
func (o *Object) GetFinalizers() []string { return nil }

// SetFinalizers implements metav1.Object; it does nothing.
func (o *Object) SetFinalizers([]string) {}

// GetOwnerReferences implements metav1.Object; always nil.
func (o *Object) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences implements metav1.Object; it does nothing.
func (o *Object) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields implements metav1.Object; always nil.
func (o *Object) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object; it does nothing.
func (o *Object) SetManagedFields([]metav1.ManagedFieldsEntry) {}
