package podgroup

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/workload"
)

// Of returns the UID of the group of pod: its controller's, or its own
// when it has none; "" when its controller is of a kind in handled (a kind
// Reroll restarts some other way).
func Of(pod client.Object, handled map[schema.GroupKind]bool) types.UID {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return pod.GetUID()
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || handled[gv.WithKind(ref.Kind).GroupKind()] {
		return ""
	}
	return ref.UID
}

// OptedIn reports whether pod's own annotations opt in, parsed with cfg as
// a workload's.
func OptedIn(pod client.Object, cfg annotation.Config) bool {
	o, _ := cfg.Parse(pod.GetAnnotations(), nil)
	return o.Enabled()
}

// Records are the records of the groups (state.Entries in Reroll's
// namespace), one JSON object of annotations per group.
type Records struct {
	Entries *state.Entries
}

// Get reads the record of group req: nil when there is none, or when it is
// unreadable (logged; the group starts again from first sight). It returns
// the error of the read.
func (r Records) Get(ctx context.Context, req types.NamespacedName) (map[string]string, error) {
	v, ok, err := r.Entries.Get(ctx, req)
	if err != nil || !ok {
		return nil, err
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		// A damaged record starts again from first sight.
		ctrl.LoggerFrom(ctx).Info("Dropping unreadable pod record", "group", req.String(), "error", err.Error())
		return nil, nil
	}
	return out, nil
}

// Put stores the record of group req; an empty one removes it. It returns
// the error of the encoding or of the write.
func (r Records) Put(ctx context.Context, req types.NamespacedName, rec map[string]string) error {
	var v string
	if len(rec) > 0 {
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encoding the pod record: %w", err)
		}
		v = string(b)
	}
	return r.Entries.Put(ctx, req, v)
}

// AsWorkload returns the group of pods as a workload: its controller's
// kind and name (the pod's own for a bare pod), the group's UID (req's
// name), the record rec as its annotations. pods must not be empty.
func AsWorkload(req ctrl.Request, pods []corev1.Pod, rec map[string]string) (workload.PodOwner, client.Object) {
	kind := workload.PodOwner{GVK: corev1.SchemeGroupVersion.WithKind("Pod")}
	name := pods[0].Name
	if ref := metav1.GetControllerOf(&pods[0]); ref != nil {
		kind.GVK = schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		name = ref.Name
	}
	obj := kind.New()
	obj.SetNamespace(req.Namespace)
	obj.SetName(name)
	obj.SetUID(types.UID(req.Name))
	obj.SetAnnotations(maps.Clone(rec))
	return kind, obj
}
