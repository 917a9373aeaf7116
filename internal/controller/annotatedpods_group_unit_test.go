package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestAnnotatedPods_Group(t *testing.T) {
	a := &annotatedPods{handled: map[schema.GroupKind]bool{{Group: "apps", Kind: "ReplicaSet"}: true, {Group: "kafka.strimzi.io", Kind: "StrimziPodSet"}: true}}
	cases := map[string]struct {
		// owner is the pod's controller reference; nil for a bare pod.
		owner *metav1.OwnerReference
		// want is the group's UID; "" when Reroll handles the owner.
		want types.UID
	}{
		"bare pod is its own group":        {owner: nil, want: "pod-uid"},
		"unknown owner groups by its UID":  {owner: &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Operand", UID: "op-uid"}, want: "op-uid"},
		"a ReplicaSet is handled":          {owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", UID: "rs-uid"}},
		"an --evict-owner kind is handled": {owner: &metav1.OwnerReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "StrimziPodSet", UID: "ps-uid"}},
		"same kind name, other group":      {owner: &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "ReplicaSet", UID: "x-uid"}, want: "x-uid"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "pod-uid"}}
			if c.owner != nil {
				c.owner.Controller = ptr.To(true)
				pod.OwnerReferences = []metav1.OwnerReference{*c.owner}
			}
			gomega.NewWithT(t).Expect(a.group(pod)).To(gomega.Equal(c.want))
		})
	}
}
