package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/reroll/reroll/internal/reference"
)

// Secrets Store CSI Driver integration (--enable-csi-integration), as
// Stakater Reloader has it: the driver writes, for each pod and each
// SecretProviderClass it mounts, a SecretProviderClassPodStatus listing the
// ID and version of every object it mounted, and rewrites it when a rotation
// mounts new versions. A SecretProviderClass is then one more reference kind:
// its data are the versions in the status written last in the namespace
// (digest.Latest), one digest per object ID, recorded in
// reroll.dev/observed like a Secret's keys.

// AddToScheme registers the Secrets Store CSI Driver types Reroll reads.
var AddToScheme = csiv1.AddToScheme

// requestsForProviderClassStatus maps a SecretProviderClassPodStatus to the
// workloads of r's kind that mount its SecretProviderClass or list it,
// through index.References.
func (r *WorkloadReconciler) requestsForProviderClassStatus(ctx context.Context, obj client.Object) []reconcile.Request {
	s, ok := obj.(*csiv1.SecretProviderClassPodStatus)
	if !ok || s.Status.SecretProviderClassName == "" {
		return nil
	}
	class := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Status.SecretProviderClassName}}
	return r.requestsFor(reference.SecretProviderClass)(ctx, class)
}

// providerClassChanged passes creates and deletes, which may change which
// status is the latest, and updates that change the class or the mounted
// versions; the driver's other writes are dropped.
func providerClassChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*csiv1.SecretProviderClassPodStatus)
			after, ok2 := e.ObjectNew.(*csiv1.SecretProviderClassPodStatus)
			return !ok1 || !ok2 || before.Status.SecretProviderClassName != after.Status.SecretProviderClassName ||
				!equality.Semantic.DeepEqual(before.Status.Objects, after.Status.Objects)
		},
	}
}
