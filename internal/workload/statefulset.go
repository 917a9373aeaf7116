package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// StatefulSet is the apps/v1 StatefulSet. Its controller rolls pods when
// spec.template changes, following the StatefulSet's own update strategy.
type StatefulSet struct{}

// Name implements Kind.
func (StatefulSet) Name() string { return "StatefulSet" }

// New implements Kind.
func (StatefulSet) New() client.Object { return &appsv1.StatefulSet{} }

// NewList implements Kind.
func (StatefulSet) NewList() client.ObjectList { return &appsv1.StatefulSetList{} }

// PodTemplate implements Kind; the result points into obj (is a decoded
// copy when obj is the cache's compact.Workload: compact.PodTemplate, which
// decodes the template only).
func (StatefulSet) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	if t, ok := compact.PodTemplate(obj); ok {
		return t, nil
	}
	return &obj.(*appsv1.StatefulSet).Spec.Template, nil
}

// SetPodTemplate implements Kind.
func (StatefulSet) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	obj.(*appsv1.StatefulSet).Spec.Template = *t
	return nil
}
