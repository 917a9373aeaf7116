package eviction

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FromPod returns what Decide needs of a pod.
func FromPod(p *corev1.Pod) Pod {
	out := Pod{
		Name: p.Name, UID: p.UID, Created: p.CreationTimestamp.Time,
		Terminating: p.DeletionTimestamp != nil,
		Owned:       metav1.GetControllerOf(p) != nil,
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return out
}

// TransformPod is the cache transform for pods: it keeps what a restart by
// eviction reads (metadata without managedFields, the references of the
// pod spec: containers' env, envFrom and volume mounts, volumes; and the Ready condition)
// and drops the rest, so that caching the pods of the namespaces in scope
// costs little. It is idempotent, as informers may run it twice.
func TransformPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	delete(p.Annotations, corev1.LastAppliedConfigAnnotation)
	spec := corev1.PodSpec{Volumes: p.Spec.Volumes}
	for _, c := range p.Spec.InitContainers {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts})
	}
	for _, c := range p.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts})
	}
	p.Spec = spec
	var ready []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = append(ready, corev1.PodCondition{Type: c.Type, Status: c.Status})
		}
	}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, Conditions: ready}
	return p, nil
}
