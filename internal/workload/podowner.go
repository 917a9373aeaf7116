package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// PodOwner is a kind of object that creates pods itself and has no pod
// template Reroll can change, named with --evict-owner: Strimzi's
// StrimziPodSet (Reloader issue #1057), or an operator's own kind. Reroll
// restarts its pods by eviction, never by a template change. It reads the
// references from the specs of the pods the object controls and keeps its
// records in the object's annotations, so it needs get, list, watch and
// patch on the kind.
type PodOwner struct {
	// GVK is the kind's group, version and kind.
	GVK schema.GroupVersionKind
}

// ErrNoTemplate is returned by PodOwner.SetPodTemplate: a pod owner's pods
// restart only by eviction.
var ErrNoTemplate = errors.New("the kind has no pod template Reroll can change")

// ParsePodOwner parses an --evict-owner value, "<group>/<version>/<Kind>"
// (e.g. "kafka.strimzi.io/v1beta2/StrimziPodSet"). It returns an error
// naming the malformed value.
func ParsePodOwner(s string) (PodOwner, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return PodOwner{}, fmt.Errorf("evict owner %q: want <group>/<version>/<Kind>", s)
	}
	return PodOwner{GVK: schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}}, nil
}

// Name implements Kind.
func (o PodOwner) Name() string { return o.GVK.Kind }

// New implements Kind.
func (o PodOwner) New() client.Object { return Unstructured{GVK: o.GVK}.New() }

// NewList implements Kind.
func (o PodOwner) NewList() client.ObjectList { return Unstructured{GVK: o.GVK}.NewList() }

// PodTemplate implements Kind: the object has no template; an empty one is
// returned (its references are in its pods: ReadPodTemplate).
func (o PodOwner) PodTemplate(client.Object) (*corev1.PodTemplateSpec, error) {
	return &corev1.PodTemplateSpec{}, nil
}

// SetPodTemplate implements Kind; it always returns ErrNoTemplate.
func (o PodOwner) SetPodTemplate(obj client.Object, _ *corev1.PodTemplateSpec) error {
	return fmt.Errorf("%s %s/%s: %w", o.GVK.Kind, obj.GetNamespace(), obj.GetName(), ErrNoTemplate)
}

// Action implements Actor: a pod owner's pods restart by eviction.
func (o PodOwner) Action(client.Object, bool) Action { return Action{Way: ByEviction} }

// ReadPodTemplate returns TemplateOfPods of the pods obj controls (Pods),
// read through c (pods of one owner may each read their own ConfigMap under
// the same volume name, hence the prefixes).
func (o PodOwner) ReadPodTemplate(ctx context.Context, c client.Reader, obj client.Object) (*corev1.PodTemplateSpec, error) {
	pods, err := o.Pods(ctx, c, obj)
	if err != nil {
		return nil, err
	}
	return TemplateOfPods(pods), nil
}

// TemplateOfPods returns a template that holds every pod's containers and
// volumes, each pod's under names prefixed with the pod's name, and the
// annotations of all the pods (a later pod's value wins): what the planner
// reads for a group of pods that has no template of its own.
func TemplateOfPods(pods []corev1.Pod) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{}
	for _, p := range pods {
		for k, v := range p.Annotations {
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[k] = v
		}
		prefix := p.Name + "/"
		for _, v := range p.Spec.Volumes {
			v.Name = prefix + v.Name
			t.Spec.Volumes = append(t.Spec.Volumes, v)
		}
		for _, ctr := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			ctr.Name = prefix + ctr.Name
			ctr.VolumeMounts = append([]corev1.VolumeMount(nil), ctr.VolumeMounts...)
			for i := range ctr.VolumeMounts {
				ctr.VolumeMounts[i].Name = prefix + ctr.VolumeMounts[i].Name
			}
			t.Spec.Containers = append(t.Spec.Containers, ctr)
		}
	}
	return t
}

// Pods returns the pods in obj's namespace whose controller is obj, read
// through c (the cache).
func (o PodOwner) Pods(ctx context.Context, c client.Reader, obj client.Object) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing the pods of %s %s/%s: %w", o.GVK.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == obj.GetUID() {
			out = append(out, p)
		}
	}
	return out, nil
}

// Selector returns the label selector at spec.selector of obj (a
// Deployment's, a StatefulSet's, or an operator's pod set's); nil when it has
// none or it is malformed.
func Selector(obj client.Object) *metav1.LabelSelector {
	m, err := asMap(obj)
	if err != nil {
		return nil
	}
	sel, found, err := unstructured.NestedMap(m, "spec", "selector")
	if !found || err != nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, out); err != nil {
		return nil
	}
	return out
}

// DesiredPods returns how many pods obj keeps running: spec.replicas (a
// Deployment's, a StatefulSet's, most operators' kinds'), else a
// DaemonSet's status.desiredNumberScheduled; 0 when neither is known.
func DesiredPods(obj client.Object) int {
	// The built-in kinds are read from their fields: converting a whole
	// typed object to unstructured data for one number cost about 4% of
	// Reroll's CPU on the fanout bench profile, once per reconcile.
	switch o := compact.Expand(obj).(type) {
	case *appsv1.Deployment:
		return int(ptr.Deref(o.Spec.Replicas, 0))
	case *appsv1.StatefulSet:
		return int(ptr.Deref(o.Spec.Replicas, 0))
	case *appsv1.ReplicaSet:
		return int(ptr.Deref(o.Spec.Replicas, 0))
	case *appsv1.DaemonSet:
		return int(o.Status.DesiredNumberScheduled)
	}
	m, err := asMap(obj)
	if err != nil {
		return 0
	}
	if n, found, err := unstructured.NestedInt64(m, "spec", "replicas"); found && err == nil {
		return int(n)
	}
	if n, found, err := unstructured.NestedInt64(m, "status", "desiredNumberScheduled"); found && err == nil {
		return int(n)
	}
	return 0
}

// asMap returns obj as unstructured data, without a copy for an
// Unstructured object.
func asMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}
