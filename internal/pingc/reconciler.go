package pingc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/workload"
)

// ReasonConverged is the Normal Event on a ConfigMap or Secret when no pod
// uses a previous version of it (a copy of content it no longer holds)
// any more: its rotation is complete.
const ReasonConverged = "Converged"

// The collector's permissions are versioned configuration's, off by
// default with it: patch and delete on ConfigMaps and Secrets, list on
// pods, ReplicaSets, ControllerRevisions and Jobs. Without them a pass
// fails (and deletes nothing); a namespace without copies costs no
// request, so a Reroll without versioned configuration never asks.

// Reconciler collects the copies of one namespace and writes their
// rotation receipts. A request's Namespace is the namespace (its Name is
// empty): one worker handles a namespace at a time.
type Reconciler struct {
	// Client reads the workloads of Kinds from the manager's cache, and
	// writes (patches and deletes copies).
	Client client.Client
	// APIReader reads ReplicaSets, ControllerRevisions, Jobs, pods and
	// the copies' metadata from the API server: none of them is cached.
	APIReader client.Reader
	// Store is Reroll's ConfigMap and Secret store: where the copies are
	// found and verified, and the sources' current content read.
	Store *store.Store
	// Key is the installation key: copies' signatures, copy names and
	// the receipts' records are made under it.
	Key digest.Key
	// Kinds are the workload kinds Reroll handles (their templates are in
	// the cache).
	Kinds []workload.Kind
	// Recorder emits the Converged Events.
	Recorder record.EventRecorder
	// Options are the timings.
	Options Options
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile is one pass over the namespace req.Namespace: gather,
// decide, write.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	namespace := req.Namespace
	log := ctrl.LoggerFrom(ctx)
	copies, err := r.readCopies(ctx, namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(copies) == 0 {
		return ctrl.Result{}, nil
	}
	v := &namespaceView{copies: copies, pods: map[key]int{}, workloads: map[key]map[string]struct{}{}}
	if err := r.addTemplates(ctx, namespace, v); err != nil {
		return ctrl.Result{}, err
	}
	var read []string
	versions, err := r.versions(ctx, namespace, copies)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Read the objects that could name a copy only as far as a copy is
	// left that nothing read so far names.
	for _, s := range stages {
		if len(Candidates(plain(copies), v.named)) == 0 {
			break
		}
		if err := r.read(ctx, namespace, s, v); err != nil {
			return r.failed(ctx, err)
		}
		read = append(read, s.name)
	}
	if len(Candidates(plain(copies), v.named)) > 0 || rotating(versions) {
		if err := r.read(ctx, namespace, podsStage, v); err != nil {
			return r.failed(ctx, err)
		}
		v.podsRead = true
		read = append(read, podsStage.name)
	}
	// Fresh metadata for the copies that may be deleted or whose receipt
	// starts: the store does not keep the time of the last write.
	now := r.now()
	for _, c := range copies {
		if Candidates([]Copy{c.Copy}, v.named) != nil || (versions[c] != nil && !versions[c].HasRecord && !versions[c].Current) {
			if err := r.readMeta(ctx, namespace, c); err != nil {
				return r.failed(ctx, err)
			}
		}
	}
	var vs []Version
	previousPods := map[string]int{}
	for _, c := range copies {
		ver := versions[c]
		if ver == nil {
			continue
		}
		ver.Copy = c.Copy
		if v.podsRead {
			ver.Pods = v.pods[key{c.Kind, c.Name}]
			ver.Workloads = len(v.workloads[key{c.Kind, c.Name}])
		} else {
			// Not read: no previous version waits for its pods.
			ver.Pods = 0
		}
		if !ver.Current {
			previousPods[string(c.Kind)] += ver.Pods
		}
		vs = append(vs, *ver)
	}
	writes, pending := DecideReceipts(vs, now)
	if !v.podsRead {
		// Pods were not read because no previous version waits for them:
		// nothing starts or converges on a count of zero not read.
		writes = onlyClears(writes)
	}
	d := Decide(plain(copies), v.named, now, r.Options)
	for _, kind := range kinds {
		metrics.PreviousVersionPods(string(kind), namespace, previousPods[string(kind)])
	}

	written := map[types.UID]bool{}
	var errs []error
	for _, w := range writes {
		if err := r.writeReceipt(ctx, namespace, w); err != nil {
			errs = append(errs, err)
			continue
		}
		written[w.Version.Copy.UID] = true
	}
	for _, c := range d.Delete {
		if written[c.UID] {
			// Its resourceVersion changed with the receipt: decided again
			// on the next pass.
			continue
		}
		if err := r.deleteCopy(ctx, namespace, c); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Deleted an unused copy", "kind", c.Kind, "name", c.Name, "uid", c.UID)
	}
	if err := errors.Join(errs...); err != nil {
		return r.failed(ctx, err)
	}
	requeue := d.Requeue
	if pending || len(written) > 0 {
		if requeue == 0 || r.Options.period() < requeue {
			requeue = r.Options.period()
		}
	}
	log.V(1).Info("Looked at the copies of a namespace", "copies", len(copies), "read", read,
		"deleted", len(d.Delete), "kept", len(d.Kept), "receipts", len(writes), "requeue", requeue)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// forbiddenRetry is when a namespace whose pass was refused a permission
// is looked at again.
const forbiddenRetry = 10 * time.Minute

// failed returns err for the workqueue to retry with backoff, except a
// refused permission: versioned config's role is not granted (the chart's
// versionedConfig.enabled), which retrying soon cannot fix. That pass
// deletes nothing; it is logged, and tried again after forbiddenRetry
// rather than counted as a reconcile error every few seconds.
func (r *Reconciler) failed(ctx context.Context, err error) (ctrl.Result, error) {
	if !apierrors.IsForbidden(err) {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Not collecting the copies of a namespace: a permission is missing (versioned config's role)", "error", err.Error(), "retryAfter", forbiddenRetry)
	return ctrl.Result{RequeueAfter: forbiddenRetry}, nil
}

// versions returns, per signed copy whose source the store holds, what
// the receipt reads of it (without pods and workloads, read later).
func (r *Reconciler) versions(ctx context.Context, namespace string, copies []*copyState) (map[*copyState]*Version, error) {
	out := map[*copyState]*Version{}
	for _, c := range copies {
		if !c.Signed || c.source == "" {
			continue
		}
		current, changed, exists, err := r.sourceVersion(ctx, c.Kind, namespace, c.source)
		if err != nil {
			return nil, fmt.Errorf("reading the source of %s %s/%s: %w", c.Kind, namespace, c.Name, err)
		}
		ver := &Version{Source: c.source, SourceExists: exists, Current: current == c.Name, SourceChanged: changed}
		ver.Record, ver.HasRecord = ReadRecord(r.Key, string(c.UID), c.annotations)
		out[c] = ver
	}
	return out, nil
}

// rotating reports whether a previous version has not converged yet: its
// pods must be counted.
func rotating(versions map[*copyState]*Version) bool {
	for _, v := range versions {
		if v.SourceExists && !v.Current && (!v.HasRecord || v.Record.Converged.IsZero()) {
			return true
		}
	}
	return false
}

func onlyClears(writes []Write) []Write {
	var out []Write
	for _, w := range writes {
		if w.Step == StepClear {
			out = append(out, w)
		}
	}
	return out
}

func plain(copies []*copyState) []Copy {
	out := make([]Copy, len(copies))
	for i, c := range copies {
		out[i] = c.Copy
	}
	return out
}

// writeReceipt writes w's record on its copy (a merge patch of the two
// annotations, guarded by the resourceVersion read, so that two replicas
// or a restart never both start or converge one rotation), then, for a
// convergence, emits the Converged Event on the source and counts it.
func (r *Reconciler) writeReceipt(ctx context.Context, namespace string, w Write) error {
	c := w.Version.Copy
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(c.Kind)))
	m.SetNamespace(namespace)
	m.SetName(c.Name)
	m.SetUID(c.UID)
	m.SetResourceVersion(c.ResourceVersion)
	var annotations map[string]any
	if w.Step == StepClear {
		annotations = map[string]any{AnnotationRotation: nil, AnnotationRotationSignature: nil}
	} else {
		annotations = map[string]any{}
		for k, v := range SignRecord(r.Key, string(c.UID), w.Record) {
			annotations[k] = v
		}
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": c.ResourceVersion, "annotations": annotations,
	}}
	if err := r.Client.Patch(ctx, m, rawMergePatch(patch)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or written since the read: decided again next pass.
			return nil
		}
		return fmt.Errorf("writing the rotation record of %s %s/%s: %w", c.Kind, namespace, c.Name, err)
	}
	if w.Step != StepConverge {
		ctrl.LoggerFrom(ctx).V(1).Info("Recorded a previous version", "kind", c.Kind, "copy", c.Name, "step", string(w.Step))
		return nil
	}
	var source client.Object
	if c.Kind == reference.Secret {
		source = &corev1.Secret{}
	} else {
		source = &corev1.ConfigMap{}
	}
	if obj, ok, err := r.Store.Get(ctx, c.Kind, namespace, w.Version.Source); err == nil && ok {
		source.SetUID(obj.GetUID())
		source.SetResourceVersion(obj.GetResourceVersion())
	}
	source.SetNamespace(namespace)
	source.SetName(w.Version.Source)
	msg := Message(c, w.Record)
	r.Recorder.Event(source, corev1.EventTypeNormal, ReasonConverged, msg)
	metrics.RotationConverged(string(c.Kind), namespace, w.Record.Workloads, w.Record.Pods, w.Record.Converged.Sub(w.Record.Since).Seconds())
	ctrl.LoggerFrom(ctx).Info("A previous version converged", "kind", c.Kind, "source", w.Version.Source, "copy", c.Name,
		"workloads", w.Record.Workloads, "pods", w.Record.Pods, "since", w.Record.Since, "converged", w.Record.Converged)
	return nil
}

// deleteCopy deletes c with its UID and resourceVersion as
// preconditions: a copy re-created, claimed by another workload or
// otherwise written since the read is not deleted.
func (r *Reconciler) deleteCopy(ctx context.Context, namespace string, c Copy) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(c.Kind)))
	m.SetNamespace(namespace)
	m.SetName(c.Name)
	uid, rv := c.UID, c.ResourceVersion
	err := r.Client.Delete(ctx, m, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting the unused copy %s %s/%s: %w", c.Kind, namespace, c.Name, err)
	}
	metrics.CopyDeleted(string(c.Kind), namespace)
	return nil
}

// rawMergePatch is a JSON merge patch of a value marshalled as is.
type rawMergePatch map[string]any

func (p rawMergePatch) Type() types.PatchType { return types.MergePatchType }

func (p rawMergePatch) Data(client.Object) ([]byte, error) { return json.Marshal(map[string]any(p)) }

// metaEach calls f with each item of list.
func metaEach(list client.ObjectList, f func(client.Object)) error {
	return apimeta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("a list item is a %T, not an object", o)
		}
		f(obj)
		return nil
	})
}
