package workload

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
