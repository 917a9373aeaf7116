package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/validator"
)

// setupValidation adds the Validator and ClusterValidator controllers and
// returns the Gate the workload reconcilers ask before a rollout
// (validator.Setup: nil when the API server serves no Validator or Reroll
// may not read them), reading the ConfigMaps' and Secrets'
// resourceVersions from the store; with the admission webhook, it also
// serves the content admission webhook.
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
	if opts.Admission.Enabled {
		// The content admission webhook: the rules with admission Warn or
		// Deny, at write time (docs/validation.md).
		mgr.GetWebhookServer().Register(validator.ContentAdmissionPath, validator.ContentAdmissionHandler(gate))
	}
	return gate, nil
}
