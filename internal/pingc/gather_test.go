package pingc

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWorkloadOf(t *testing.T) {
	controlled := func(kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels, OwnerReferences: []metav1.OwnerReference{
			{Kind: kind, Name: name, Controller: ptr.To(true)},
		}}}
	}
	cases := map[string]struct {
		// pod is the pod whose workload is named.
		pod *corev1.Pod
		// want is the name it counts under.
		want string
	}{
		"a Deployment's pod counts as the ReplicaSet's owner, not the ReplicaSet": {
			pod:  controlled("ReplicaSet", "web-5d8f7c", map[string]string{"pod-template-hash": "5d8f7c"}),
			want: "ReplicaSet-owner/web",
		},
		"an Argo Rollout's pod, by its own hash label": {
			pod:  controlled("ReplicaSet", "canary-7f9b", map[string]string{"rollouts-pod-template-hash": "7f9b"}),
			want: "ReplicaSet-owner/canary",
		},
		"a ReplicaSet whose name does not end in the hash is its own workload": {
			pod:  controlled("ReplicaSet", "plain", map[string]string{"pod-template-hash": "5d8f7c"}),
			want: "ReplicaSet/plain",
		},
		"a StatefulSet's pod counts as the StatefulSet": {
			pod:  controlled("StatefulSet", "db", nil),
			want: "StatefulSet/db",
		},
		"a pod without a controller is its own workload": {
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kept", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1"}}}},
			want: "Pod/kept",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := workloadOf(tc.pod); got != tc.want {
				t.Errorf("workloadOf = %q, want %q", got, tc.want)
			}
		})
	}
}
