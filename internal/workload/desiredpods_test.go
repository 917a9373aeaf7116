package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDesiredPods_TypedKindsCountAsTheirUnstructuredData checks the typed
// fast path of DesiredPods against the unstructured reading of the same
// object, which every other kind goes through.
func TestDesiredPods_TypedKindsCountAsTheirUnstructuredData(t *testing.T) {
	cases := map[string]struct {
		// obj is the typed workload.
		obj client.Object
		// want is its desired pods.
		want int
	}{
		"a Deployment's spec.replicas": {
			obj: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}}, want: 3,
		},
		"a Deployment without spec.replicas": {
			obj: &appsv1.Deployment{}, want: 0,
		},
		"a StatefulSet's spec.replicas": {
			obj: &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](5)}}, want: 5,
		},
		"a ReplicaSet's spec.replicas": {
			obj: &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}}, want: 2,
		},
		"a DaemonSet's status.desiredNumberScheduled": {
			obj: &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 7}}, want: 7,
		},
		"a DaemonSet not scheduled yet": {
			obj: &appsv1.DaemonSet{}, want: 0,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DesiredPods(c.obj); got != c.want {
				t.Errorf("DesiredPods(typed) = %d, want %d", got, c.want)
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := DesiredPods(&unstructured.Unstructured{Object: m}); got != c.want {
				t.Errorf("DesiredPods(unstructured) = %d, want %d", got, c.want)
			}
		})
	}
}
