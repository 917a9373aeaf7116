package source

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	"github.com/reroll/reroll/internal/scope"
)

// SetupProviderClasses prepares the SecretProviderClassPodStatus informer
// of mgr's cache and its ProviderClassIndex, once for every kind, for the
// Secrets Store CSI Driver integration (--enable-csi-integration). It
// reports false, with a log line, when the API server does not serve the
// CRD or Reroll may not list and watch the statuses in scope s (the
// chart's csiIntegration.enabled, or config/components/csi, grants it):
// then no workload rolls for CSI volumes, as in Reloader without the CRD,
// and everything else runs. It returns the error of the discovery, the
// index or the informer.
func SetupProviderClasses(ctx context.Context, mgr ctrl.Manager, s scope.Scope) (bool, error) {
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
	if err := mgr.GetFieldIndexer().IndexField(ctx, &csiv1.SecretProviderClassPodStatus{}, ProviderClassIndex, func(o client.Object) []string {
		return []string{o.(*csiv1.SecretProviderClassPodStatus).Status.SecretProviderClassName}
	}); err != nil {
		return false, fmt.Errorf("indexing SecretProviderClassPodStatuses: %w", err)
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &csiv1.SecretProviderClassPodStatus{}); err != nil {
		return false, fmt.Errorf("creating the SecretProviderClassPodStatus informer: %w", err)
	}
	return true, nil
}
