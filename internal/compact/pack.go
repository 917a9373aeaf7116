package compact

import (
	"maps"
	"strings"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pack makes the kept metadata m cheaper to hold (issue #36), changing m
// in place; every value stays equal (nil and empty maps and slices as they
// were). The decoder makes a separate string for each name, UID, value and
// key, among the garbage of the whole object it decodes, so that the few
// that stay pin part-used pages of the heap after the initial list. pack
//
//   - copies the strings of this object alone (generateName,
//     resourceVersion, selfLink, label and annotation values, finalizers,
//     owner names and UIDs, managedFields apiVersions, which hold the
//     template's Sums) into one allocation; not the name and UID, which
//     maps of the controllers keep as keys for as long as the workload
//     exists (firstsight.Memory, metrics.Workloads): a key taken from one
//     allocation would keep all of it after the workload's next update;
//   - makes the strings that many objects repeat (namespace, label and
//     annotation keys, owner apiVersions and kinds, managedFields managers,
//     operations, field types and subresources) one shared string each
//     (unique.Make);
//   - gives labels or annotations equal to those of a workload packed
//     shortly before that workload's map (recent), else a new map of their
//     size.
//
// FieldsV1, times and numbers are kept as they are. It costs about 0.8 µs
// per object (BenchmarkFrom). On the fan-out bench profile's 2,050
// Deployments, which carry the same annotations, the live heap is about
// 0.83 MB smaller and the anonymous RSS after sync 0.8 MiB
// (docs/benchmarks.md, "Packed workload metadata").
func pack(m *metav1.ObjectMeta) {
	labels, labelsShared := recent.find(m.Labels)
	annotations, annotationsShared := recent.find(m.Annotations)
	n := len(m.GenerateName) + len(m.ResourceVersion) + len(m.SelfLink)
	if !labelsShared {
		n += valuesLen(m.Labels)
	}
	if !annotationsShared {
		n += valuesLen(m.Annotations)
	}
	for _, f := range m.Finalizers {
		n += len(f)
	}
	for _, r := range m.OwnerReferences {
		n += len(r.Name) + len(r.UID)
	}
	for _, e := range m.ManagedFields {
		n += len(e.APIVersion)
	}
	// After Grow(n) the n bytes are written without another allocation,
	// so each string taken from b stays valid; b only appends.
	var b strings.Builder
	b.Grow(n)
	own := func(s string) string {
		if s == "" {
			return s
		}
		start := b.Len()
		b.WriteString(s)
		return b.String()[start:]
	}
	m.Namespace = shared(m.Namespace)
	m.GenerateName, m.ResourceVersion, m.SelfLink = own(m.GenerateName), own(m.ResourceVersion), own(m.SelfLink)
	for i := range m.Finalizers {
		m.Finalizers[i] = own(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.Name, r.UID = own(r.Name), types.UID(own(string(r.UID)))
		r.APIVersion, r.Kind = shared(r.APIVersion), shared(r.Kind)
	}
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.APIVersion = own(e.APIVersion)
		e.Manager, e.FieldsType, e.Subresource = shared(e.Manager), shared(e.FieldsType), shared(e.Subresource)
		e.Operation = metav1.ManagedFieldsOperationType(shared(string(e.Operation)))
	}
	if !labelsShared {
		labels = ownMap(m.Labels, own)
		recent.add(labels)
	}
	if !annotationsShared {
		annotations = ownMap(m.Annotations, own)
		recent.add(annotations)
	}
	m.Labels, m.Annotations = labels, annotations
}

// valuesLen returns the length of m's values together.
func valuesLen(m map[string]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// ownMap returns a new map of m's size (nil when m is nil) with m's
// entries, each key shared (unique.Make), each value own(value).
func ownMap(m map[string]string, own func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[shared(k)] = own(v)
	}
	return out
}

// shared returns s as the one string of its value that every caller
// shares while any holds it (unique.Make); "" as it is.
func shared(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// recentMaps is how many label or annotation maps pack compares a new
// one with: enough for the few distinct sets of labels and annotations
// of workloads created together from one template (the bench's fan-out:
// 2,050 Deployments with the same annotations), few enough that the
// compare costs nothing beside the decode.
const recentMaps = 8

// recent are the label and annotation maps kept last (maps); pack gives a
// workload whose labels or annotations equal one of them that map, not
// its own (about 340 bytes each: a map of up to 8 entries is one group
// of 8 slots). Cached objects are never changed in place (a reader that
// changes one copies it first: the cache's Get and List copy, and
// Expand decodes a copy), so sharing a map among them is safe as sharing
// one string is.
var recent recentTable

// recentTable is a fixed few maps, the oldest replaced first.
type recentTable struct {
	mu   sync.Mutex
	maps [recentMaps]map[string]string
	next int
}

// find returns the kept map equal to m, and true; nil and false when none
// is, or when m is empty (nil and empty maps stay as they are).
func (t *recentTable) find(m map[string]string) (map[string]string, bool) {
	if len(m) == 0 {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.maps {
		if len(r) == len(m) && maps.Equal(r, m) {
			return r, true
		}
	}
	return nil, false
}

// add keeps m (not empty) in place of the oldest kept map.
func (t *recentTable) add(m map[string]string) {
	if len(m) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maps[t.next] = m
	t.next = (t.next + 1) % recentMaps
}
