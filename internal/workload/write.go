package workload

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the field manager of every write Reroll makes.
const FieldManager = "reroll"

// Patch writes the difference between obj and desired as a strategic merge
// patch (a JSON merge patch for unstructured objects) guarded by obj's
// resourceVersion, so a concurrent change to the workload makes it fail with
// a conflict instead of being overwritten. It does nothing when they do not
// differ. A write of metadata annotations and labels alone (a record, no
// rollout) merges key by key and needs no guard: without it, the status
// updates a workload's controller makes cannot turn it into a conflict.
func Patch(ctx context.Context, c client.Client, obj, desired client.Object) error {
	return patch(ctx, c, obj, desired, false)
}

// PatchGuarded is Patch guarded by obj's resourceVersion even when only
// metadata changed: for the record of a rollout made elsewhere (a Job
// created, a referenced Deployment's template changed), so that a reconcile
// working from a stale copy of the workload conflicts and re-reads instead
// of reporting the rollout twice.
func PatchGuarded(ctx context.Context, c client.Client, obj, desired client.Object) error {
	return patch(ctx, c, obj, desired, true)
}

func patch(ctx context.Context, c client.Client, obj, desired client.Object, guard bool) error {
	if data, same, ok := metadataPatch(obj, desired, guard); ok {
		if same {
			return nil
		}
		if err := c.Patch(ctx, desired, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("patching %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	if equality.Semantic.DeepEqual(obj, desired) {
		return nil
	}
	// Strategic merge patches merge container and env lists by name; custom
	// resources accept only JSON merge patches, which replace lists whole,
	// safe here because the resourceVersion guards against a lost update.
	var opts []client.MergeFromOption
	if guard || !onlyMetadataChanged(obj, desired) {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	var p client.Patch = client.StrategicMergeFrom(obj, opts...)
	if _, ok := obj.(*unstructured.Unstructured); ok {
		p = client.MergeFromWithOptions(obj, opts...)
	}
	if err := c.Patch(ctx, desired, p, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// onlyMetadataChanged reports whether desired differs from obj in metadata
// annotations and labels only.
func onlyMetadataChanged(obj, desired client.Object) bool {
	d := desired.DeepCopyObject().(client.Object)
	d.SetAnnotations(obj.GetAnnotations())
	d.SetLabels(obj.GetLabels())
	return equality.Semantic.DeepEqual(obj, d)
}

// kindOf names obj's kind for messages: its GroupVersionKind's kind when
// set (always for unstructured objects), else its Go type's name (objects
// read from the cache carry no kind).
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// metadataPatch returns, for a Deployment, StatefulSet or DaemonSet whose
// desired state differs from obj only in the annotations and labels of its
// metadata and of its pod template (a rollout by the annotations strategy,
// a record, Reroll's state), the JSON merge patch of those maps: each key
// set, or null when removed; with obj's resourceVersion when guard is set
// or the pod template changes (as Patch guards). same is true when they do
// not differ at all. ok is false for any other kind or difference (an env
// var of the env-vars strategy): the caller builds a strategic merge patch.
// The status is not compared: a patch of the object never writes it.
//
// The strategic merge patch that client.StrategicMergeFrom builds encodes
// both objects whole and compares them field by field, and the semantic
// comparison calls a function per time and quantity field; on the fanout
// bench profile the two were a quarter of Reroll's allocations for patches
// that only ever set annotations. A JSON merge patch of maps merges key by
// key exactly as a strategic one does. The rest (metadata and spec without
// those maps) is compared by its protobuf encoding, the form the API server
// stores: generated code, no reflection, and equal exactly when the server
// would find nothing else to change (a nil and an empty list, or two
// spellings of one quantity, encode alike), into a buffer reused from one
// call to the next (encodings). The patch is written straight into one
// buffer of about its size, with encoding/json's escaping
// (BenchmarkMetadataPatch).
func metadataPatch(obj, desired client.Object, guard bool) (data []byte, same, ok bool) {
	bufp := encodings.Get().(*[]byte)
	defer func() {
		if cap(*bufp) <= maxPooledEncoding {
			encodings.Put(bufp)
		}
	}()
	buf, o, ok := encodeRest((*bufp)[:0], obj)
	if !ok {
		return nil, false, false
	}
	buf, d, ok := encodeRest(buf, desired)
	*bufp = buf
	if !ok || o.meta != d.meta || o.spec != d.spec || !bytes.Equal(buf[:o.meta+o.spec], buf[o.meta+o.spec:]) {
		return nil, false, false
	}
	var keys [4][]string
	size := len(`{"metadata":{},"spec":{"template":{"metadata":{}}}}`)
	for i := range keys {
		keys[i] = changedKeys(o.maps[i], d.maps[i])
		for _, k := range keys[i] {
			// A key and its value, quoted, with a colon and a comma;
			// escapes grow the buffer once more.
			size += len(k) + len(d.maps[i][k]) + 6
		}
	}
	meta := len(keys[0]) > 0 || len(keys[1]) > 0
	template := len(keys[2]) > 0 || len(keys[3]) > 0
	if !meta && !template {
		return nil, true, true
	}
	b := make([]byte, 0, size+len(`"annotations":{},"labels":{},`)*2+len(`,"resourceVersion":""`)+len(obj.GetResourceVersion()))
	b = append(b, `{"metadata":{`...)
	b = appendMapPatch(b, `"annotations":`, keys[0], d.maps[0])
	if len(keys[0]) > 0 && len(keys[1]) > 0 {
		b = append(b, ',')
	}
	b = appendMapPatch(b, `"labels":`, keys[1], d.maps[1])
	if guard || template {
		if meta {
			b = append(b, ',')
		}
		b = append(b, `"resourceVersion":`...)
		b = appendJSONString(b, obj.GetResourceVersion())
	}
	b = append(b, '}')
	if template {
		b = append(b, `,"spec":{"template":{"metadata":{`...)
		b = appendMapPatch(b, `"annotations":`, keys[2], d.maps[2])
		if len(keys[2]) > 0 && len(keys[3]) > 0 {
			b = append(b, ',')
		}
		b = appendMapPatch(b, `"labels":`, keys[3], d.maps[3])
		b = append(b, `}}}`...)
	}
	return append(b, '}'), false, true
}

// encodings holds the buffers of metadataPatch's comparisons, reused: two
// encodings of a workload per reconcile that writes it would otherwise be
// garbage at once. A buffer grown past maxPooledEncoding (a pod template
// of unusual size) is left to the garbage collector.
var encodings = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledEncoding is the largest buffer (bytes) encodings keeps.
const maxPooledEncoding = 64 << 10

// rest is what encodeRest found of one object: the length (bytes) of the
// encodings of its metadata and spec without the maps, and the four maps
// (metadata annotations, labels, pod template annotations, labels).
type rest struct {
	meta, spec int
	maps       [4]map[string]string
}

// encodeRest appends to b the protobuf encodings of obj's metadata and of
// its spec, each without the annotations and labels of the metadata and of
// the pod template (Kubernetes' generated code writes map keys sorted:
// deterministic), for a Deployment, StatefulSet or DaemonSet; ok is false
// for any other type, or when an encoding fails. The copies it encodes stay
// on the stack: each case calls the generated code of its concrete type.
func encodeRest(b []byte, obj client.Object) (_ []byte, r rest, ok bool) {
	var m metav1.ObjectMeta
	var err error
	start := len(b)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		m = o.ObjectMeta
		s := o.Spec
		r.maps[2], r.maps[3] = s.Template.Annotations, s.Template.Labels
		s.Template.Annotations, s.Template.Labels = nil, nil
		n := s.Size()
		b = grow(b, n)
		_, err = s.MarshalToSizedBuffer(b[len(b)-n:])
	case *appsv1.StatefulSet:
		m = o.ObjectMeta
		s := o.Spec
		r.maps[2], r.maps[3] = s.Template.Annotations, s.Template.Labels
		s.Template.Annotations, s.Template.Labels = nil, nil
		n := s.Size()
		b = grow(b, n)
		_, err = s.MarshalToSizedBuffer(b[len(b)-n:])
	case *appsv1.DaemonSet:
		m = o.ObjectMeta
		s := o.Spec
		r.maps[2], r.maps[3] = s.Template.Annotations, s.Template.Labels
		s.Template.Annotations, s.Template.Labels = nil, nil
		n := s.Size()
		b = grow(b, n)
		_, err = s.MarshalToSizedBuffer(b[len(b)-n:])
	default:
		return b, r, false
	}
	if err != nil {
		return b, r, false
	}
	r.spec = len(b) - start
	r.maps[0], r.maps[1] = m.Annotations, m.Labels
	m.Annotations, m.Labels = nil, nil
	n := m.Size()
	b = grow(b, n)
	if _, err := m.MarshalToSizedBuffer(b[len(b)-n:]); err != nil {
		return b, r, false
	}
	r.meta = n
	return b, r, true
}

// grow returns b extended by n bytes, whose content is left to the caller.
func grow(b []byte, n int) []byte {
	return slices.Grow(b, n)[:len(b)+n]
}

// changedKeys returns, sorted, the keys of the JSON merge patch that turns
// map from into to: each key of to whose value differs, and each key of
// from that to lacks (null); nil when they hold the same.
func changedKeys(from, to map[string]string) []string {
	var keys []string
	for k, v := range to {
		if old, ok := from[k]; !ok || old != v {
			keys = append(keys, k)
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// appendMapPatch appends field (a quoted name and a colon) and the object
// of keys (changedKeys) with their values in to, null where to lacks one;
// nothing when keys is empty.
func appendMapPatch(b []byte, field string, keys []string, to map[string]string) []byte {
	if len(keys) == 0 {
		return b
	}
	b = append(b, field...)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		if v, ok := to[k]; ok {
			b = appendJSONString(b, v)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string escaped as encoding/json's
// Marshal escapes it: quote, backslash and control characters, <, > and &
// (HTML-safe), U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
