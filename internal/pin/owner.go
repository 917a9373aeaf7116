package pin

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OwnerReference returns the reference that makes the workload owner (of
// kind gvk) an owner of a copy: neither the controller (a copy shared by
// several workloads has several owners, none of which manages it) nor
// blocking the owner's deletion (which would need `update` on the owner's
// finalizers). Kubernetes' garbage collector deletes a copy once every
// owner is gone (foreground or background deletion of the last workload).
func OwnerReference(owner metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	no := false
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &no,
		BlockOwnerDeletion: &no,
	}
}

// AddOwner adds ref to obj's owner references unless one with ref's UID
// is there, and reports whether it added it.
func AddOwner(obj metav1.Object, ref metav1.OwnerReference) bool {
	refs := obj.GetOwnerReferences()
	for _, r := range refs {
		if r.UID == ref.UID {
			return false
		}
	}
	obj.SetOwnerReferences(append(refs, ref))
	return true
}
