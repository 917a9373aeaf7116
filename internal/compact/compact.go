package compact

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kind is the type a Workload decodes to.
type kind uint8

const (
	deployment kind = iota + 1
	statefulSet
	daemonSet
)

// Workload is a cached Deployment, StatefulSet or DaemonSet in compact
// form: its ObjectMeta as the transform left it, and the rest (spec and
// status) as the protobuf encoding of the typed object with an empty
// ObjectMeta (the generated Marshal of k8s.io/api/apps/v1). It implements
// client.Object: metadata reads cost nothing; DeepCopyObject decodes.
//
// On a trimmed Deployment of the fan-out bench profile the encoded rest
// is about 300 bytes where the typed spec and status take about 2.5 KB of
// heap (docs/benchmarks.md, "Compact workload store").
type Workload struct {
	metav1.ObjectMeta
	kind kind
	// indexed says whether index holds the values of the one field index
	// that keeps them with the object (Indexed).
	indexed bool
	// rest is the encoding of the object without its metadata; it is
	// never changed after From (DeepCopyObject shares it).
	rest []byte
	// index are the values Indexed computed for w, kept for its next call:
	// they fill the 24 bytes of the 288-byte size class that the fields
	// above leave free, so a Workload takes no more heap with them.
	index []string
}

// From returns the compact form of obj when obj is a *appsv1.Deployment,
// *appsv1.StatefulSet or *appsv1.DaemonSet; ok is false for any other
// type and when the encoding fails (the caller keeps obj then). The
// Workload takes obj's ObjectMeta (its slices, not copies; its strings
// packed, pack): obj must not be used afterwards. A *Workload is returned
// as it is. Each Workload is allocated by itself (Blocks.From takes them
// from arrays).
func From(obj any) (_ client.Object, ok bool) { return from(obj, nil) }

// from is From, with the Workload taken from blocks (nil: allocated by
// itself).
func from(obj any, blocks *Blocks) (_ client.Object, ok bool) {
	var (
		w    = blocks.newWorkload()
		rest []byte
		err  error
	)
	switch o := obj.(type) {
	case *Workload:
		return o, true
	case *appsv1.Deployment:
		b := appsv1.Deployment{Spec: o.Spec, Status: o.Status}
		rest, err = b.Marshal()
		w.ObjectMeta, w.kind = o.ObjectMeta, deployment
	case *appsv1.StatefulSet:
		b := appsv1.StatefulSet{Spec: o.Spec, Status: o.Status}
		rest, err = b.Marshal()
		w.ObjectMeta, w.kind = o.ObjectMeta, statefulSet
	case *appsv1.DaemonSet:
		b := appsv1.DaemonSet{Spec: o.Spec, Status: o.Status}
		rest, err = b.Marshal()
		w.ObjectMeta, w.kind = o.ObjectMeta, daemonSet
	default:
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	w.rest = rest
	pack(&w.ObjectMeta)
	return w, true
}

// Expand returns the typed object (*appsv1.Deployment, *appsv1.StatefulSet
// or *appsv1.DaemonSet) that obj, a *Workload, decodes to: a new object,
// which the caller may change; any other obj is returned as it is (not a
// copy). Event handlers, predicates and field index functions of the
// three kinds call it before they read a spec or a status.
func Expand(obj client.Object) client.Object {
	if w, ok := obj.(*Workload); ok {
		return w.decode()
	}
	return obj
}

// decode returns the typed object w encodes, with a deep copy of w's
// metadata. The encoding is w's own (From), which the generated Unmarshal
// of the same type reads back; should it ever fail, the object holds the
// metadata only, so that no reader sees a half-decoded spec.
func (w *Workload) decode() client.Object {
	var out client.Object
	switch w.kind {
	case deployment:
		d := &appsv1.Deployment{}
		if d.Unmarshal(w.rest) != nil {
			*d = appsv1.Deployment{}
		}
		w.ObjectMeta.DeepCopyInto(&d.ObjectMeta)
		out = d
	case statefulSet:
		s := &appsv1.StatefulSet{}
		if s.Unmarshal(w.rest) != nil {
			*s = appsv1.StatefulSet{}
		}
		w.ObjectMeta.DeepCopyInto(&s.ObjectMeta)
		out = s
	case daemonSet:
		d := &appsv1.DaemonSet{}
		if d.Unmarshal(w.rest) != nil {
			*d = appsv1.DaemonSet{}
		}
		w.ObjectMeta.DeepCopyInto(&d.ObjectMeta)
		out = d
	}
	return out
}

// GetObjectKind implements runtime.Object: a Workload carries no kind (the
// cache sets it on the typed copies it returns).
func (w *Workload) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: it returns the typed object w
// decodes to (Expand), not a *Workload. controller-runtime's cache reader
// copies each object it returns with it and then checks that the copy's
// type is the caller's, so a Get or List of *appsv1.Deployment (and of the
// other two kinds) from the cache returns the trimmed typed object.
func (w *Workload) DeepCopyObject() runtime.Object { return w.decode() }

// NoCopyFor returns client.UnsafeDisableDeepCopy for a List into list,
// unless list is a DeploymentList, StatefulSetList or DaemonSetList, whose
// items the cache holds as Workloads: a list of those without copies
// would fail (the cache reader cannot put a *Workload into the typed
// list's items), so each item is decoded instead (Expand, about 3 µs and
// 3 KB for a Deployment of the fanout bench profile). Callers that list
// without copies for speed use it; they must not change what they get.
func NoCopyFor(list client.ObjectList) client.ListOption {
	switch list.(type) {
	case *appsv1.DeploymentList, *appsv1.StatefulSetList, *appsv1.DaemonSetList:
		return &client.ListOptions{}
	}
	return client.UnsafeDisableDeepCopy
}
