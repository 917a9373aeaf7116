package validator

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/reference"
)

// Setup adds the Validator controller to mgr (and the ClusterValidator
// controller, when the API server serves ClusterValidators and Reroll may
// list and watch them; Gate.Cluster says so) and returns the Gate the
// workload reconcilers ask before a rollout; nil, with a log line, when
// the API server serves no Validator (the CRD is not installed) or Reroll
// may not list and watch them (the chart's namespace scope). The Gate
// tells with Events through recorder, reads the time from now (nil:
// time.Now), and the resourceVersion of a ConfigMap or Secret from
// resourceVersion ("" when not found). It returns the error of the API
// lookup, of the permission check or of the controller's setup.
func Setup(ctx context.Context, mgr ctrl.Manager, recorder record.EventRecorder, now func() time.Time,
	resourceVersion func(ctx context.Context, kind reference.Kind, namespace, name string) string) (*Gate, error) {
	gk := rerollv1alpha1.GroupVersion.WithKind("Validator").GroupKind()
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, rerollv1alpha1.GroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.Log.Info("Not validating new content: the API server serves no reroll.dev/v1alpha1 Validator; install the CRD (config/crd or the Helm chart)")
			return nil, nil
		}
		return nil, fmt.Errorf("looking up the Validator API: %w", err)
	}
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: rerollv1alpha1.GroupVersion.Group, Resource: "validators"},
		}}
		if err := mgr.GetClient().Create(ctx, review); err != nil {
			return nil, fmt.Errorf("checking permission to %s validators: %w", verb, err)
		}
		if !review.Status.Allowed {
			ctrl.Log.Info("Not validating new content: no permission to list and watch reroll.dev validators (the chart grants it in cluster scope only)", "verb", verb)
			return nil, nil
		}
	}
	gate := &Gate{
		Reader:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Recorder:        recorder,
		Now:             now,
		ResourceVersion: resourceVersion,
	}
	if err := (&Reconciler{Client: mgr.GetClient(), Gate: gate}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Validator controller: %w", err)
	}
	cluster, err := servedAndReadable(ctx, mgr, "ClusterValidator", "clustervalidators")
	if err != nil {
		return nil, err
	}
	gate.Cluster = cluster
	if gate.Cluster {
		if err := (&ClusterReconciler{Client: mgr.GetClient(), Gate: gate}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the ClusterValidator controller: %w", err)
		}
	} else {
		ctrl.Log.Info("Not applying ClusterValidators: the API server serves none, or Reroll may not list and watch them (the chart grants it in cluster scope only)")
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
