package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/source"
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

// setupCSI prepares the SecretProviderClassPodStatus informer and its index,
// once for every kind. It reports false, with a log line, when the API
// server does not serve the CRD or Reroll may not read the statuses (the
// chart's csiIntegration.enabled, or config/components/csi, grants it): then
// no workload rolls for CSI volumes, as in Reloader without the CRD, and
// everything else runs.
func setupCSI(ctx context.Context, mgr ctrl.Manager, s scope.Scope) (bool, error) {
	gvk := schema.GroupVersionKind{Group: csiv1.GroupVersion.Group, Version: csiv1.GroupVersion.Version, Kind: "SecretProviderClassPodStatus"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			ctrl.LoggerFrom(ctx).Info("Not watching SecretProviderClassPodStatuses: the API server does not serve them (is the Secrets Store CSI Driver installed?)", "groupVersion", gvk.GroupVersion().String())
			return false, nil
		}
		return false, fmt.Errorf("discovering %s: %w", gvk.String(), err)
	}
	if err := s.Permitted(ctx, mgr.GetClient(), gvk.Group, "secretproviderclasspodstatuses", "list", "watch"); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Not watching SecretProviderClassPodStatuses")
		return false, nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &csiv1.SecretProviderClassPodStatus{}, source.ProviderClassIndex, func(o client.Object) []string {
		return []string{o.(*csiv1.SecretProviderClassPodStatus).Status.SecretProviderClassName}
	}); err != nil {
		return false, fmt.Errorf("indexing SecretProviderClassPodStatuses: %w", err)
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &csiv1.SecretProviderClassPodStatus{}); err != nil {
		return false, fmt.Errorf("creating the SecretProviderClassPodStatus informer: %w", err)
	}
	return true, nil
}

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
