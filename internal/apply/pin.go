package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// Copier makes the copies of versioned config (internal/pin) before the
// workload's write.
type Copier struct {
	// Client creates copies and patches their owners.
	Client client.Client
	// Reader reads sources and existing copies from the API server: the
	// cache keeps no values (digest.Object).
	Reader client.Reader
	// Key is the installation key the copies are named and signed under.
	Key digest.Key
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

// Copies makes each copy of step for the workload owner (of kind gvk),
// whose pod template is t: it reads the source from the API server, builds
// the copy (pin.Build) owned by the workload, and creates it; a copy that
// exists already and verifies (pin.Verify, with the source's type) is
// shared, and the workload is added to its owners. A copy that cannot be
// made for a reason retrying cannot fix soon (forbidden, a ResourceQuota,
// invalid or too large, a Secret type Reroll does not copy, a name taken
// by an object that is no copy Reroll made) is left out of the renames
// with its reason in Failed. It returns an error, for the reconcile to
// retry, when the API fails otherwise, when a source is gone, and with a
// conflict when a source's content is no longer the one decided (the
// decision is made again).
func (c Copier) Copies(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, t *corev1.PodTemplateSpec, step *plan.Pinning) (Pinned, error) {
	failed := map[pin.Ref]bool{}
	var why []error
	for _, cp := range step.Copies {
		err := c.copy(ctx, owner, gvk, cp)
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

func (c Copier) copy(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, cp plan.PinCopy) error {
	ns := owner.GetNamespace()
	var src, existing client.Object
	switch cp.Kind {
	case reference.ConfigMap:
		src, existing = &corev1.ConfigMap{}, &corev1.ConfigMap{}
	case reference.Secret:
		src, existing = &corev1.Secret{}, &corev1.Secret{}
	default:
		return fmt.Errorf("%s %s/%s: %w", cp.Kind, ns, cp.Source, pin.ErrNotPinnable)
	}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: cp.Source}, src); err != nil {
		return fmt.Errorf("reading %s %s/%s to copy it: %w", cp.Kind, ns, cp.Source, err)
	}
	obj, err := pin.Build(c.Key, src)
	if err != nil {
		return err
	}
	if obj.GetName() != cp.Name {
		return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cp.Name,
			fmt.Errorf("%s %s/%s changed since the decision", cp.Kind, ns, cp.Source))
	}
	ref := pin.OwnerReference(owner, gvk)
	pin.AddOwner(obj, ref)
	err = c.Client.Create(ctx, obj, client.FieldOwner(workload.FieldManager))
	if err == nil {
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
	before := existing.DeepCopyObject().(client.Object)
	if !pin.AddOwner(existing, ref) {
		// Already an owner: a copy nothing has named for a while may be
		// on its way to the garbage collection; a write restarts its grace
		// (pin.AnnotationClaimedAt).
		if !pin.NeedsClaim(existing, time.Now()) {
			return nil
		}
		a := existing.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[pin.AnnotationClaimedAt] = time.Now().UTC().Format(time.RFC3339)
		existing.SetAnnotations(a)
	}
	// A strategic merge patch adds the owner reference by its UID: the
	// workloads sharing one copy (a fan-out) add theirs at once without
	// conflicting, where a merge patch would replace the whole list.
	if err := c.Client.Patch(ctx, existing, client.StrategicMergeFrom(before), client.FieldOwner(workload.FieldManager)); err != nil {
		return fmt.Errorf("adding %s %s/%s to the owners of %s %s: %w", gvk.Kind, ns, owner.GetName(), cp.Kind, cp.Name, err)
	}
	return nil
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
