package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// Deployment is the apps/v1 Deployment. Its controller rolls pods when
// spec.template changes, following the Deployment's own update strategy.
type Deployment struct{}

// Name implements Kind.
func (Deployment) Name() string { return "Deployment" }

// New implements Kind.
func (Deployment) New() client.Object { return &appsv1.Deployment{} }

// NewList implements Kind.
func (Deployment) NewList() client.ObjectList { return &appsv1.DeploymentList{} }

// PodTemplate implements Kind; the result points into obj (is a decoded
// copy when obj is the cache's compact.Workload: compact.PodTemplate, which
// decodes the template only).
func (Deployment) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	if t, ok := compact.PodTemplate(obj); ok {
		return t, nil
	}
	return &obj.(*appsv1.Deployment).Spec.Template, nil
}

// SetPodTemplate implements Kind.
func (Deployment) SetPodTemplate(obj client.Object, t *corev1.PodTemplateSpec) error {
	obj.(*appsv1.Deployment).Spec.Template = *t
	return nil
}

// Paused implements Pausable.
func (Deployment) Paused(obj client.Object) bool {
	return compact.Expand(obj).(*appsv1.Deployment).Spec.Paused
}

// SetPaused implements Pausable.
func (Deployment) SetPaused(obj client.Object, paused bool) {
	obj.(*appsv1.Deployment).Spec.Paused = paused
}
