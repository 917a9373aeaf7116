package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// Copier makes the copies of versioned config (internal/pin) before the
// workload's write.
//
// A copy has no owner references: it is shared by every workload of its
// namespace that consumes the same content, and Kubernetes' garbage
// collector deletes a dependent once all of its listed owners are gone, so
// only a list of every sharer would be safe, and keeping that list costs
// a write of the one shared object per workload (a fan-out of 2,000
// Deployments: 2,000 writes to one ConfigMap, and a failed create, a read
// and a patch per workload). The copies' garbage collection
// (internal/pingc) deletes a copy once nothing names it, which covers a
// deleted workload: its ReplicaSets, revisions and pods go with it.
type Copier struct {
	// Client creates copies and writes their claims.
	Client client.Client
	// Reader reads sources and existing copies from the API server: the
	// cache keeps no values (digest.Object).
	Reader client.Reader
	// Store finds a copy that exists already without a request
	// (internal/store); nil always asks the API server.
	Store CopyStore
	// Known remembers the copies proven from an API read (immutable, of
	// their source's type); nil remembers none.
	Known *KnownCopies
	// Key is the installation key the copies are named and signed under.
	Key digest.Key
	// CarryLabels are the label keys whose values (or absence) a copy
	// takes from its source: --resource-label-selector's
	// (scope.Scope.ResourceLabelKeys), so that a copy is selected, and so
	// in Reroll's store and collected, exactly when its source is. Other
	// labels are not carried: a GitOps tool's tracking label would make it
	// prune the copy.
	CarryLabels []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// CopyStore is what the Copier reads of Reroll's ConfigMap and Secret
// store (*store.Store): the cached object of kind namespace/name (its
// annotations and keyed digests), and whether it exists.
type CopyStore interface {
	Get(ctx context.Context, kind reference.Kind, namespace, name string) (*digest.Object, bool, error)
}

// KnownCopies remembers, by the UIDs of a copy and of its source, the
// copies that an API read proved immutable, of the source's type and
// without owners, and when each was last claimed: what the store cannot
// tell (it keeps annotations and digests only). Kubernetes never makes an
// immutable object mutable again nor changes a Secret's type, so a proof
// holds for the life of both UIDs; a copy or source deleted and re-created
// has a new UID and is proven again. It holds at most knownCopiesMax
// entries (then starts afresh: one more API read per copy). Safe for
// concurrent use; the zero value is ready.
type KnownCopies struct {
	mu      sync.Mutex
	claimed map[knownCopy]time.Time
}

// knownCopiesMax bounds KnownCopies: about 100 bytes an entry.
const knownCopiesMax = 10000

type knownCopy struct{ copy, source types.UID }

// get reports whether k is proven, and when it was last claimed (the
// copy's creation or claim that the proof saw, or a claim written since).
func (m *KnownCopies) get(k knownCopy) (time.Time, bool) {
	if m == nil {
		return time.Time{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.claimed[k]
	return t, ok
}

// put records k as proven, last claimed at claimed.
func (m *KnownCopies) put(k knownCopy, claimed time.Time) {
	if m == nil || k.copy == "" || k.source == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.claimed == nil || len(m.claimed) >= knownCopiesMax {
		m.claimed = map[knownCopy]time.Time{}
	}
	if t, ok := m.claimed[k]; !ok || claimed.After(t) {
		m.claimed[k] = claimed
	}
}

// Pinned is what the copies' step made of a plan's Pinning: what the
// workload's write renames in its pod template, the template's new
// pin.TemplateAnnotation, and why each copy that could not be made was not
// (its references then name the source: the change still reaches the
// pods).
type Pinned struct {
	Renames    map[pin.Ref]string
	Annotation string
	Failed     []error
}

// Copies makes each copy of step for the workload owner, whose pod
// template is t. A copy that the store holds, that verifies (pin.Verify)
// as a copy of the same source, and that Known proved already costs no
// request (a claim, pin.AnnotationClaimedAt, at most once per
// pin.ClaimEvery when it was last written longer ago). Otherwise it reads
// the source from the API server, builds the copy (pin.Build) and creates
// it; a copy that exists already is read, and shared when it verifies,
// holds the source's type and is immutable (owner references that an
// older Reroll wrote are removed, so that Kubernetes' garbage collector
// does not delete it with its first owners). A copy that cannot be made
// for a reason retrying cannot fix soon (forbidden, a ResourceQuota,
// invalid or too large, a Secret type Reroll does not copy, a name taken
// by an object that is no copy Reroll made) is left out of the renames
// with its reason in Failed. It returns an error, for the reconcile to
// retry, when the API fails otherwise, when a source is gone, and with a
// conflict when a source's content is no longer the one decided (the
// decision is made again).
func (c Copier) Copies(ctx context.Context, owner client.Object, t *corev1.PodTemplateSpec, step *plan.Pinning) (Pinned, error) {
	failed := map[pin.Ref]bool{}
	var why []error
	for _, cp := range step.Copies {
		err := c.copy(ctx, owner.GetNamespace(), cp)
		if err == nil {
			continue
		}
		if !permanent(err) {
			return Pinned{}, err
		}
		failed[pin.Ref{Kind: cp.Kind, Name: cp.Name}] = true
		why = append(why, err)
	}
	renames, annotation := step.Fallback(&t.Spec, failed)
	return Pinned{Renames: renames, Annotation: annotation, Failed: why}, nil
}

// errTaken marks a copy's name held by an object that is no copy Reroll
// made of the same source and type.
var errTaken = errors.New("the name is taken by an object that is no copy made by reroll")

// permanent reports whether err makes a copy fail for longer than a retry
// (the workload then rolls onto its source).
func permanent(err error) bool {
	return errors.Is(err, pin.ErrNotPinnable) || errors.Is(err, errTaken) ||
		apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err)
}

func (c Copier) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// cached shares cp from the store when it can: true when the copy exists
// there, verifies as a copy of cp's source, and Known proved it for the
// source the store holds now; it then writes a claim when one is due.
func (c Copier) cached(ctx context.Context, ns string, cp plan.PinCopy) (bool, error) {
	if c.Store == nil || c.Known == nil {
		return false, nil
	}
	existing, ok, err := c.Store.Get(ctx, cp.Kind, ns, cp.Name)
	if err != nil || !ok {
		// Not watched, or not seen yet: the API decides.
		return false, nil
	}
	src, ok, err := c.Store.Get(ctx, cp.Kind, ns, cp.Source)
	if err != nil || !ok {
		return false, nil
	}
	v, err := pin.Verify(c.Key, cp.Kind, existing)
	if err != nil || v.Source != cp.Source {
		return false, nil
	}
	k := knownCopy{copy: existing.GetUID(), source: src.GetUID()}
	claimed, ok := c.Known.get(k)
	if !ok {
		return false, nil
	}
	return true, c.claim(ctx, ns, cp, k, claimed)
}

// claim writes pin.AnnotationClaimedAt on the copy k when it was last
// claimed (or created) more than pin.ClaimEvery ago: the garbage
// collection keeps a copy nothing names yet for its grace after its last
// write, and this workload's template write is about to name it.
func (c Copier) claim(ctx context.Context, ns string, cp plan.PinCopy, k knownCopy, claimed time.Time) error {
	now := c.now()
	if now.Sub(claimed) <= pin.ClaimEvery {
		return nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(cp.Kind)))
	m.SetNamespace(ns)
	m.SetName(cp.Name)
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, k.copy, pin.AnnotationClaimedAt, now.UTC().Format(time.RFC3339))
	if err := c.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(workload.FieldManager)); err != nil {
		return fmt.Errorf("claiming %s %s/%s, the copy of %s: %w", cp.Kind, ns, cp.Name, cp.Source, err)
	}
	c.Known.put(k, now)
	return nil
}

func (c Copier) copy(ctx context.Context, ns string, cp plan.PinCopy) error {
	var src, existing client.Object
	switch cp.Kind {
	case reference.ConfigMap:
		src, existing = &corev1.ConfigMap{}, &corev1.ConfigMap{}
	case reference.Secret:
		src, existing = &corev1.Secret{}, &corev1.Secret{}
	default:
		return fmt.Errorf("%s %s/%s: %w", cp.Kind, ns, cp.Source, pin.ErrNotPinnable)
	}
	if ok, err := c.cached(ctx, ns, cp); ok || err != nil {
		return err
	}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: cp.Source}, src); err != nil {
		return fmt.Errorf("reading %s %s/%s to copy it: %w", cp.Kind, ns, cp.Source, err)
	}
	obj, err := pin.Build(c.Key, src)
	if err != nil {
		return err
	}
	carryLabels(obj, src, c.CarryLabels)
	if obj.GetName() != cp.Name {
		return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cp.Name,
			fmt.Errorf("%s %s/%s changed since the decision", cp.Kind, ns, cp.Source))
	}
	err = c.Client.Create(ctx, obj, client.FieldOwner(workload.FieldManager))
	if err == nil {
		c.Known.put(knownCopy{copy: obj.GetUID(), source: src.GetUID()}, obj.GetCreationTimestamp().Time)
		metrics.CopyCreated(string(cp.Kind), ns)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s, the copy of %s: %w", cp.Kind, ns, cp.Name, cp.Source, err)
	}
	// Shared with another workload (or made by an earlier try): use it only
	// when Reroll made it, from this source, with this content and type.
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: cp.Name}, existing); err != nil {
		return fmt.Errorf("reading %s %s/%s, the copy of %s: %w", cp.Kind, ns, cp.Name, cp.Source, err)
	}
	v, err := pin.Verify(c.Key, cp.Kind, existing)
	if err != nil || v.Source != cp.Source || !sameType(src, existing) {
		return fmt.Errorf("%s %s/%s: %w", cp.Kind, ns, cp.Name, errTaken)
	}
	k := knownCopy{copy: existing.GetUID(), source: src.GetUID()}
	if len(existing.GetOwnerReferences()) > 0 {
		// Made by a Reroll that owned copies by their workloads: Kubernetes
		// would delete it with those, while this workload names it.
		patch := fmt.Sprintf(`{"metadata":{"uid":%q,"ownerReferences":null}}`, k.copy)
		if err := c.Client.Patch(ctx, existing, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(workload.FieldManager)); err != nil {
			return fmt.Errorf("removing the owners of %s %s/%s, the copy of %s: %w", cp.Kind, ns, cp.Name, cp.Source, err)
		}
		c.Known.put(k, c.now())
		return nil
	}
	claimed := pin.LastWrite(existing)
	c.Known.put(k, claimed)
	return c.claim(ctx, ns, cp, k, claimed)
}

// sameType reports whether two Secrets have one type (ConfigMaps have
// none).
func sameType(a, b client.Object) bool {
	sa, ok1 := a.(*corev1.Secret)
	sb, ok2 := b.(*corev1.Secret)
	return !ok1 || !ok2 || sa.Type == sb.Type
}

// pinTemplate renames desired's pod template references as pinned says
// and sets its pin.TemplateAnnotation; nothing when pinned is nil.
func (w Writer) pinTemplate(desired client.Object, pinned *Pinned) error {
	if pinned == nil {
		return nil
	}
	t, err := w.Kind.PodTemplate(desired)
	if err != nil {
		return err
	}
	pin.Rewrite(&t.Spec, pinned.Renames)
	if pinned.Annotation == "" {
		delete(t.Annotations, pin.TemplateAnnotation)
	} else {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[pin.TemplateAnnotation] = pinned.Annotation
	}
	return w.Kind.SetPodTemplate(desired, t)
}

// carryLabels sets on the copy obj its source src's value of each label
// key in keys that src has; the copy's own labels (pin.LabelCopyOf) stay.
func carryLabels(obj, src client.Object, keys []string) {
	l := obj.GetLabels()
	for _, k := range keys {
		v, ok := src.GetLabels()[k]
		if _, own := l[k]; !ok || own {
			continue
		}
		if l == nil {
			l = map[string]string{}
		}
		l[k] = v
	}
	obj.SetLabels(l)
}
