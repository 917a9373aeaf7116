package workload

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unstructured is a workload kind Reroll has no Go type for: an Argo
// Rollout, an OpenShift DeploymentConfig, or any custom resource named with
// --workload. It is read and written through unstructured objects.
//
// Either TemplatePath names a pod template inside the object (for example
// spec.template), and Reroll reads references from it and writes its trigger
// into it; or AnnotationsPath names a string map (for example
// spec.podAnnotations or metadata.annotations) into which Reroll writes its
// trigger annotation, for operators that build pods from other fields and
// copy that map onto them. With AnnotationsPath there is no template to read
// references from: such workloads opt in with explicit lists
// (reroll.dev/configmaps, reroll.dev/secrets), and only the annotations
// strategy applies.
type Unstructured struct {
	// GVK is the kind's group, version and kind.
	GVK schema.GroupVersionKind
	// TemplatePath is the path of the pod template, field by field.
	TemplatePath []string
	// AnnotationsPath is the path of the annotations map, when the kind has
	// no pod template.
	AnnotationsPath []string
	// ArgoRollout adds Argo Rollouts' restart strategy: an object annotated
	// reloader.stakater.com/rollout-strategy: restart rolls by setting
	// spec.restartAt rather than changing its template.
	ArgoRollout bool
}

// RolloutStrategyAnnotation on an Argo Rollout selects "restart" (set
// spec.restartAt) instead of the default pod template change; Reloader's
// annotation.
const RolloutStrategyAnnotation = "reloader.stakater.com/rollout-strategy"

// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps.openshift.io,resources=deploymentconfigs,verbs=get;list;watch;patch

// ArgoRollout returns the argoproj.io/v1alpha1 Rollout kind.
func ArgoRollout() Unstructured {
	return Unstructured{GVK: schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}, TemplatePath: []string{"spec", "template"}, ArgoRollout: true}
}

// DeploymentConfig returns the apps.openshift.io/v1 DeploymentConfig kind.
func DeploymentConfig() Unstructured {
	return Unstructured{GVK: schema.GroupVersionKind{Group: "apps.openshift.io", Version: "v1", Kind: "DeploymentConfig"}, TemplatePath: []string{"spec", "template"}}
}

// ParseUnstructured parses a --workload value:
// "<group>/<version>/<Kind>:<template path>" (e.g.
// "apps.kruise.io/v1alpha1/CloneSet:spec.template"), or
// "<group>/<version>/<Kind>:annotations=<path>" (e.g.
// "example.com/v1/Database:annotations=spec.podAnnotations"). The core
// group is written "<version>/<Kind>". It returns an error naming the part
// that is malformed.
func ParseUnstructured(s string) (Unstructured, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return Unstructured{}, fmt.Errorf("workload %q: want <group>/<version>/<Kind>:<path>", s)
	}
	gvkPart, path := s[:i], s[i+1:]
	parts := strings.Split(gvkPart, "/")
	var gvk schema.GroupVersionKind
	switch len(parts) {
	case 2:
		gvk = schema.GroupVersionKind{Version: parts[0], Kind: parts[1]}
	case 3:
		gvk = schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
	default:
		return Unstructured{}, fmt.Errorf("workload %q: %q is not <group>/<version>/<Kind>", s, gvkPart)
	}
	if gvk.Version == "" || gvk.Kind == "" {
		return Unstructured{}, fmt.Errorf("workload %q: version and kind are required", s)
	}
	u := Unstructured{GVK: gvk}
	if rest, ok := strings.CutPrefix(path, "annotations="); ok {
		path = rest
		u.AnnotationsPath = strings.Split(path, ".")
	} else {
		u.TemplatePath = strings.Split(path, ".")
	}
	for _, f := range strings.Split(path, ".") {
		if f == "" {
			return Unstructured{}, fmt.Errorf("workload %q: path %q has an empty field", s, path)
		}
	}
	return u, nil
}

// Name implements Kind.
func (u Unstructured) Name() string { return u.GVK.Kind }

// New implements Kind.
func (u Unstructured) New() client.Object {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(u.GVK)
	return o
}

// NewList implements Kind.
func (u Unstructured) NewList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(u.GVK.GroupVersion().WithKind(u.GVK.Kind + "List"))
	return l
}

// PodTemplate implements Kind. It returns a copy; an object without the
// field yields an empty template. With AnnotationsPath, the template holds
// only the annotations found there.
func (u Unstructured) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	o := obj.(*unstructured.Unstructured)
	if u.AnnotationsPath != nil {
		a, _, err := unstructured.NestedStringMap(o.Object, u.AnnotationsPath...)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s/%s: %s is not a string map: %w", ErrShape, u.GVK.Kind, o.GetNamespace(), o.GetName(), strings.Join(u.AnnotationsPath, "."), err)
		}
		return &corev1.PodTemplateSpec{ObjectMeta: metaWithAnnotations(a)}, nil
	}
	m, _, err := unstructured.NestedMap(o.Object, u.TemplatePath...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s/%s: %s is not an object: %w", ErrShape, u.GVK.Kind, o.GetNamespace(), o.GetName(), strings.Join(u.TemplatePath, "."), err)
	}
	t := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, t); err != nil {
		return nil, fmt.Errorf("%w: %s %s/%s: %s is not a pod template: %w", ErrShape, u.GVK.Kind, o.GetNamespace(), o.GetName(), strings.Join(u.TemplatePath, "."), err)
	}
	return t, nil
}

// SetPodTemplate implements Kind. It writes back only what differs from the
// object's current template, the annotations and each container's env, the
// only parts Reroll changes, so the object's other fields stay exactly as
// they were.
func (u Unstructured) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	o := obj.(*unstructured.Unstructured)
	cur, err := u.PodTemplate(obj)
	if err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(cur.Annotations, t.Annotations) {
		path := u.AnnotationsPath
		if path == nil {
			path = append(append([]string{}, u.TemplatePath...), "metadata", "annotations")
		}
		if err := unstructured.SetNestedStringMap(o.Object, t.Annotations, path...); err != nil {
			return fmt.Errorf("%s %s/%s: writing %s: %w", u.GVK.Kind, o.GetNamespace(), o.GetName(), strings.Join(path, "."), err)
		}
	}
	if u.AnnotationsPath != nil {
		return nil
	}
	containersPath := append(append([]string{}, u.TemplatePath...), "spec", "containers")
	containers, _, err := unstructured.NestedSlice(o.Object, containersPath...)
	if err != nil {
		return fmt.Errorf("%s %s/%s: reading containers: %w", u.GVK.Kind, o.GetNamespace(), o.GetName(), err)
	}
	changed := false
	for i := range t.Spec.Containers {
		if i >= len(cur.Spec.Containers) || i >= len(containers) || equality.Semantic.DeepEqual(cur.Spec.Containers[i].Env, t.Spec.Containers[i].Env) {
			continue
		}
		env := make([]any, 0, len(t.Spec.Containers[i].Env))
		for _, e := range t.Spec.Containers[i].Env {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
			if err != nil {
				return fmt.Errorf("%s %s/%s: encoding env: %w", u.GVK.Kind, o.GetNamespace(), o.GetName(), err)
			}
			env = append(env, m)
		}
		c, ok := containers[i].(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s/%s: container %d is not an object", u.GVK.Kind, o.GetNamespace(), o.GetName(), i)
		}
		c["env"] = env
		changed = true
	}
	if changed {
		return unstructured.SetNestedSlice(o.Object, containers, containersPath...)
	}
	return nil
}

// workloadRef returns the Deployment an Argo Rollout's spec.workloadRef
// names, if any.
func (u Unstructured) workloadRef(obj client.Object) (types.NamespacedName, bool) {
	o, ok := obj.(*unstructured.Unstructured)
	if !u.ArgoRollout || !ok {
		return types.NamespacedName{}, false
	}
	kind, _, _ := unstructured.NestedString(o.Object, "spec", "workloadRef", "kind")
	name, _, _ := unstructured.NestedString(o.Object, "spec", "workloadRef", "name")
	if kind != "Deployment" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, true
}

// TemplateFrom implements TemplateReader: an Argo Rollout with
// spec.workloadRef runs the referenced Deployment's pod template.
func (u Unstructured) TemplateFrom(obj client.Object) (string, bool) {
	ref, ok := u.workloadRef(obj)
	return ref.Name, ok
}

// ReadPodTemplate implements TemplateReader: an Argo Rollout with
// spec.workloadRef runs the pod template of the referenced Deployment.
func (u Unstructured) ReadPodTemplate(ctx context.Context, c client.Reader, obj client.Object) (*corev1.PodTemplateSpec, error) {
	ref, ok := u.workloadRef(obj)
	if !ok {
		return u.PodTemplate(obj)
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, ref, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return &corev1.PodTemplateSpec{}, nil
		}
		return nil, fmt.Errorf("reading Deployment %s, the workloadRef of Rollout %s: %w", ref, obj.GetName(), err)
	}
	return d.Spec.Template.DeepCopy(), nil
}

// Action implements Actor for Argo Rollouts. With Reloader's restart
// strategy (RolloutStrategyAnnotation: restart) a Rollout rolls
// ByRestartAt; with spec.workloadRef it rolls ByWorkloadRef, a change to the
// referenced Deployment's pod template, which Argo watches. Every other
// object rolls by its own template.
func (u Unstructured) Action(obj client.Object, _ bool) Action {
	restart := u.ArgoRollout && obj.GetAnnotations()[RolloutStrategyAnnotation] == "restart"
	if ref, ok := u.workloadRef(obj); ok && !restart {
		return Action{Way: ByWorkloadRef, Ref: ref.Name}
	}
	if restart {
		return Action{Way: ByRestartAt}
	}
	return Action{Way: ByTemplate}
}

// SetRestartAt sets spec.restartAt of an Argo Rollout to at (RFC 3339,
// UTC), the change of ByRestartAt; the caller writes the object.
func SetRestartAt(obj client.Object, at string) error {
	o, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("%w: %T is not an unstructured object", ErrShape, obj)
	}
	if err := unstructured.SetNestedField(o.Object, at, "spec", "restartAt"); err != nil {
		return fmt.Errorf("setting spec.restartAt: %w", err)
	}
	return nil
}

func metaWithAnnotations(a map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: a}
}
