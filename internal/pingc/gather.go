package pingc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/store"
)

// kinds are the kinds of copies.
var kinds = []reference.Kind{reference.ConfigMap, reference.Secret}

// copyState is one copy as gathered: what Decide and DecideReceipts read,
// and what the writer needs.
type copyState struct {
	Copy
	// source is the source's name (pin.AnnotationCopyOf).
	source string
	// annotations are the copy's, as the store holds them.
	annotations map[string]string
	// read is true once the copy's metadata was read from the API
	// (readMeta): LastWrite and ResourceVersion are then fresh.
	read bool
}

// namespaceView is what one pass over a namespace has read.
type namespaceView struct {
	copies []*copyState
	// named is every name that the objects read so far name.
	named Names
	// pods counts, per copy kind and name, the pods naming it; complete
	// only when podsRead.
	pods map[key]int
	// workloads holds, per copy kind and name, the workloads of the pods
	// naming it (workloadOf); complete only when podsRead.
	workloads map[key]map[string]struct{}
	podsRead  bool
}

// readCopies returns the copies of namespace, from the store (which
// keeps annotations and keyed digests, what pin.Verify reads): no request
// to the API server. A kind the store does not watch has no copies Reroll
// could have made.
func (r *Reconciler) readCopies(ctx context.Context, namespace string) ([]*copyState, error) {
	var out []*copyState
	for _, kind := range kinds {
		if !r.Store.Watches(kind) {
			continue
		}
		names, err := r.Store.Names(ctx, kind, namespace)
		if errors.Is(err, store.ErrNotWatched) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of %s: %w", kind, namespace, err)
		}
		for _, name := range names {
			obj, ok, err := r.Store.Get(ctx, kind, namespace, name)
			if err != nil {
				return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
			}
			if !ok || !pin.IsCopy(obj) {
				continue
			}
			created, _ := obj.History()
			c := &copyState{
				Copy: Copy{
					Kind: kind, Name: name, UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
					Created: created, LastWrite: created,
				},
				source:      obj.GetAnnotations()[pin.AnnotationCopyOf],
				annotations: obj.GetAnnotations(),
			}
			_, verr := pin.Verify(r.Key, kind, obj)
			c.Signed = verr == nil
			out = append(out, c)
		}
	}
	return out, nil
}

// readMeta reads c's metadata from the API server (metadata only: no
// value crosses the wire): its resourceVersion, deletionTimestamp, and the time of its latest write (managedFields), which the store does
// not keep. A copy gone, or re-created under another UID since the store
// saw it, is no longer signed for this pass: it is decided on the next.
func (r *Reconciler) readMeta(ctx context.Context, namespace string, c *copyState) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(c.Kind)))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: c.Name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			c.Signed, c.read = false, true
			return nil
		}
		return fmt.Errorf("reading the metadata of %s %s/%s: %w", c.Kind, namespace, c.Name, err)
	}
	c.read = true
	if m.UID != c.UID {
		c.Signed = false
		return nil
	}
	c.ResourceVersion = m.ResourceVersion
	c.Deleting = m.DeletionTimestamp != nil
	c.annotations = m.Annotations
	c.LastWrite = m.CreationTimestamp.Time
	for _, e := range m.ManagedFields {
		if e.Time != nil && e.Time.After(c.LastWrite) {
			c.LastWrite = e.Time.Time
		}
	}
	return nil
}

// addTemplates adds the names in the pod templates of the workloads of
// namespace, of every kind Reroll handles, from the manager's cache (which
// holds them already: no request, no new informer).
func (r *Reconciler) addTemplates(ctx context.Context, namespace string, v *namespaceView) error {
	for _, kind := range r.Kinds {
		list := kind.NewList()
		if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("listing the %ss of %s: %w", kind.Name(), namespace, err)
		}
		items, err := metaItems(list)
		if err != nil {
			return err
		}
		for _, obj := range items {
			t, err := kind.PodTemplate(obj)
			if err != nil {
				// A template that cannot be read could name anything:
				// keep every copy of the namespace this pass.
				return fmt.Errorf("reading the pod template of %s %s/%s: %w", kind.Name(), namespace, obj.GetName(), err)
			}
			if t != nil {
				addPodSpec(&v.named, &t.Spec)
			}
		}
	}
	return nil
}

// pageSize bounds each list of ReplicaSets, ControllerRevisions, Jobs and
// pods: a namespace of 10,000 pods is read 500 at a time, each page
// dropped before the next is read.
const pageSize = 500

// stage is one kind of object that can name a copy, read from the API
// server, one page at a time.
type stage struct {
	name string
	list func() client.ObjectList
	// add adds the names of each item of a page to v.
	add func(list client.ObjectList, v *namespaceView)
}

// stages are the kinds read from the API server, cheapest first. Pods come
// last: the rotation receipt counts them even when no copy is left to
// collect.
var stages = []stage{
	{name: "ReplicaSets", list: func() client.ObjectList { return &appsv1.ReplicaSetList{} }, add: func(l client.ObjectList, v *namespaceView) {
		for i := range l.(*appsv1.ReplicaSetList).Items {
			addPodSpec(&v.named, &l.(*appsv1.ReplicaSetList).Items[i].Spec.Template.Spec)
		}
	}},
	{name: "ControllerRevisions", list: func() client.ObjectList { return &appsv1.ControllerRevisionList{} }, add: func(l client.ObjectList, v *namespaceView) {
		for i := range l.(*appsv1.ControllerRevisionList).Items {
			addRevision(v, &l.(*appsv1.ControllerRevisionList).Items[i])
		}
	}},
	{name: "Jobs", list: func() client.ObjectList { return &batchv1.JobList{} }, add: func(l client.ObjectList, v *namespaceView) {
		for i := range l.(*batchv1.JobList).Items {
			addPodSpec(&v.named, &l.(*batchv1.JobList).Items[i].Spec.Template.Spec)
		}
	}},
}

// podsStage reads pods and counts, per copy, the pods naming it.
var podsStage = stage{name: "Pods", list: func() client.ObjectList { return &corev1.PodList{} }, add: func(l client.ObjectList, v *namespaceView) {
	for i := range l.(*corev1.PodList).Items {
		p := &l.(*corev1.PodList).Items[i]
		n := NamesOf(&p.Spec)
		v.named.AddAll(n)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			// A finished pod reads nothing any more, but it still names
			// the copy (kept), and does not hold a rotation open.
			continue
		}
		w := workloadOf(p)
		for k := range n.set {
			v.pods[k]++
			if v.workloads[k] == nil {
				v.workloads[k] = map[string]struct{}{}
			}
			v.workloads[k][w] = struct{}{}
		}
	}
}}

// workloadOf names the workload of pod p for the rotation receipt, from
// the pod alone (no read): its controller, where a ReplicaSet's pod
// (a Deployment's, an Argo Rollout's) counts as the ReplicaSet's owner,
// whose name is the ReplicaSet's without the "-<pod-template-hash>" that
// both controllers append; a pod without a controller is its own.
func workloadOf(p *corev1.Pod) string {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return "Pod/" + p.Name
	}
	if ref.Kind == "ReplicaSet" {
		for _, l := range []string{appsv1.DefaultDeploymentUniqueLabelKey, "rollouts-pod-template-hash"} {
			if h := p.Labels[l]; h != "" && strings.HasSuffix(ref.Name, "-"+h) {
				return "ReplicaSet-owner/" + strings.TrimSuffix(ref.Name, "-"+h)
			}
		}
	}
	return ref.Kind + "/" + ref.Name
}

// addRevision adds the names in a ControllerRevision's template: the
// StatefulSet and DaemonSet controllers store a patch holding
// spec.template. Revisions of other kinds, or data that does not decode,
// are searched for each copy's name as a JSON string, so that nothing
// that may name a copy is missed.
func addRevision(v *namespaceView, cr *appsv1.ControllerRevision) {
	raw := cr.Data.Raw
	var patch struct {
		Spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &patch); err == nil && patch.Spec.Template != nil {
		addPodSpec(&v.named, &patch.Spec.Template.Spec)
		return
	}
	for _, c := range v.copies {
		if strings.Contains(string(raw), `"`+c.Name+`"`) {
			v.named.Add(c.Kind, c.Name)
		}
	}
}

// read lists s in namespace from the API server, page by page.
func (r *Reconciler) read(ctx context.Context, namespace string, s stage, v *namespaceView) error {
	cont := ""
	for {
		list := s.list()
		if err := r.APIReader.List(ctx, list, client.InNamespace(namespace), client.Limit(pageSize), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing the %s of %s: %w", s.name, namespace, err)
		}
		s.add(list, v)
		cont = list.(metav1.ListInterface).GetContinue()
		if cont == "" {
			return nil
		}
	}
}

// metaItems returns the items of list as client.Objects.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	err := metaEach(list, func(o client.Object) { out = append(out, o) })
	return out, err
}

// sourceVersion returns the name pin gives a copy of the source
// kind namespace/name's current content, and whether the source exists
// (in the store).
func (r *Reconciler) sourceVersion(ctx context.Context, kind reference.Kind, namespace, name string) (current string, changed time.Time, exists bool, err error) {
	obj, ok, err := r.Store.Get(ctx, kind, namespace, name)
	if err != nil || !ok {
		return "", time.Time{}, false, err
	}
	_, changed = obj.History()
	return pin.Name(r.Key, kind, namespace, name, digestKeys(obj)), changed, true, nil
}

func digestKeys(obj *digest.Object) map[string]string { return obj.Data().Keys }
