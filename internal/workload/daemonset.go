package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// DaemonSet is the apps/v1 DaemonSet. Its controller rolls pods when
// spec.template changes, following the DaemonSet's own update strategy.
type DaemonSet struct{}

// Name implements Kind.
func (DaemonSet) Name() string { return "DaemonSet" }

// New implements Kind.
func (DaemonSet) New() client.Object { return &appsv1.DaemonSet{} }

// NewList implements Kind.
func (DaemonSet) NewList() client.ObjectList { return &appsv1.DaemonSetList{} }

// PodTemplate implements Kind; the result points into obj (is a decoded
// copy when obj is the cache's compact.Workload: compact.PodTemplate, which
// decodes the template only).
func (DaemonSet) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	if t, ok := compact.PodTemplate(obj); ok {
		return t, nil
	}
	return &obj.(*appsv1.DaemonSet).Spec.Template, nil
}

// SetPodTemplate implements Kind.
func (DaemonSet) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	obj.(*appsv1.DaemonSet).Spec.Template = *t
	return nil
}
