package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/validator"
)

// setupValidation adds the Validator controller and returns the Gate the
// workload reconcilers ask before a rollout (validator.Setup: nil when the
// API server serves no Validator or Reroll may not read them), reading
// the ConfigMaps' and Secrets' resourceVersions from the store; with the
// admission webhook, it also serves the content admission webhook.
func setupValidation(ctx context.Context, mgr ctrl.Manager, opts Options) (*validator.Gate, error) {
	gate, err := validator.Setup(ctx, mgr, boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, opts.Now, //nolint:staticcheck // see WorkloadReconciler.Recorder
		func(ctx context.Context, kind reference.Kind, namespace, name string) string {
			o, ok, err := opts.Store.Get(ctx, kind, namespace, name)
			if err != nil || !ok {
				return ""
			}
			return o.GetResourceVersion()
		})
	if err != nil || gate == nil {
		return gate, err
	}
	cluster, err := servedAndReadable(ctx, mgr, "ClusterValidator", "clustervalidators")
	if err != nil {
		return nil, err
	}
	gate.Cluster = cluster
	if gate.Cluster {
		if err := (&validator.ClusterReconciler{Client: mgr.GetClient(), Gate: gate}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the ClusterValidator controller: %w", err)
		}
	} else {
		ctrl.Log.Info("Not applying ClusterValidators: the API server serves none, or Reroll may not list and watch them (the chart grants it in cluster scope only)")
	}
	if opts.Admission.Enabled {
		// The content admission webhook: the rules with admission Warn or
		// Deny, at write time (docs/validation.md).
		mgr.GetWebhookServer().Register(validator.ContentAdmissionPath, validator.ContentAdmissionHandler(gate))
	}
	return gate, nil
}

// servedAndReadable reports whether the API server serves the reroll.dev
// kind (resource is its plural) and Reroll may list and watch it.
func servedAndReadable(ctx context.Context, mgr ctrl.Manager, kind, resource string) (bool, error) {
	gk := rerollv1alpha1.GroupVersion.WithKind(kind).GroupKind()
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, rerollv1alpha1.GroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up the %s API: %w", kind, err)
	}
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: rerollv1alpha1.GroupVersion.Group, Resource: resource},
		}}
		if err := mgr.GetClient().Create(ctx, review); err != nil {
			return false, fmt.Errorf("checking permission to %s %s: %w", verb, resource, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}
