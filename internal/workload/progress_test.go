package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestProgress(t *testing.T) {
	meta := metav1.ObjectMeta{Generation: 3}
	argo := func(phase, observed string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": phase, "observedGeneration": observed}}}
		u.SetGeneration(3)
		return u
	}
	cases := map[string]struct {
		kind         Progresser    // the kind
		obj          client.Object // the workload with its status
		done, failed bool          // the expected progress
	}{
		"Deployment rolled out": {kind: Deployment{}, obj: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}, done: true},
		"Deployment controller has not seen the new generation": {kind: Deployment{}, obj: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}},
		"Deployment with an old pod left": {kind: Deployment{}, obj: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}}},
		"Deployment past its progress deadline": {kind: Deployment{}, obj: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}}, failed: true},
		"StatefulSet on its update revision": {kind: StatefulSet{}, obj: &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentRevision: "r2", UpdateRevision: "r2", UpdatedReplicas: 1}}, done: true},
		"StatefulSet between revisions": {kind: StatefulSet{}, obj: &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentRevision: "r1", UpdateRevision: "r2"}}},
		"DaemonSet updated and available everywhere": {kind: DaemonSet{}, obj: &appsv1.DaemonSet{ObjectMeta: meta,
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 4}}, done: true},
		"DaemonSet still updating": {kind: DaemonSet{}, obj: &appsv1.DaemonSet{ObjectMeta: meta,
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 3, NumberAvailable: 4}}},
		"Argo Rollout healthy at its generation":      {kind: ArgoRollout(), obj: argo("Healthy", "3"), done: true},
		"Argo Rollout healthy at an older generation": {kind: ArgoRollout(), obj: argo("Healthy", "2")},
		"Argo Rollout degraded":                       {kind: ArgoRollout(), obj: argo("Degraded", "3"), failed: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := c.kind.Progress(c.obj)
			if p.Done != c.done || p.Failed != c.failed {
				t.Errorf("Progress = %+v, want done %v, failed %v", p, c.done, c.failed)
			}
		})
	}
}
