package controller

import (
	"context"
	"fmt"
	"sort"

	authorizationv1 "k8s.io/api/authorization/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/validate"
	"github.com/reroll/reroll/internal/validator"
)

// setupValidation adds the Validator controller and returns the Gate the
// workload reconcilers ask before a rollout; nil, with a log line, when
// the API server serves no Validator (the CRD is not installed) or Reroll
// may not list and watch them (the chart's namespace scope).
func setupValidation(ctx context.Context, mgr ctrl.Manager, opts Options) (*validator.Gate, error) {
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
	gate := &validator.Gate{
		Reader:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  boundedRecorder{mgr.GetEventRecorderFor(FieldManager)}, //nolint:staticcheck // see WorkloadReconciler.Recorder
		Now:       opts.Now,
		ResourceVersion: func(ctx context.Context, kind reference.Kind, namespace, name string) string {
			o, ok, err := opts.Store.Get(ctx, kind, namespace, name)
			if err != nil || !ok {
				return ""
			}
			return o.GetResourceVersion()
		},
	}
	if err := (&validator.Reconciler{Client: mgr.GetClient(), Gate: gate}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Validator controller: %w", err)
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

// Validity implements plan.View: the Validators' verdict on the new
// content of changes (validator.Gate.Check, one GET per content, cached),
// and, in a namespace that shares change sets (a Namespace wave), on the
// copies with the same content in the other shared namespaces, so that an
// invalid copy anywhere holds the whole set. A copy that a Validator checks
// and that does not hold this content yet is Awaited. The zero Validity
// when validation is off.
func (v workloadView) Validity(changes []plan.Diff) (plan.Validity, error) {
	r, ctx, obj := v.r, v.Ctx, v.obj
	g := r.validation
	if g == nil {
		return plan.Validity{}, nil
	}
	var shared []string
	if r.changeSets != nil && r.changeSets.readNamespaces {
		order, err := r.changeSets.waves(ctx, v.now)
		if err != nil {
			return plan.Validity{}, err
		}
		if order.Shared(obj.GetNamespace()) {
			for ns := range order.Places {
				if ns != obj.GetNamespace() {
					shared = append(shared, ns)
				}
			}
			sort.Strings(shared)
		}
	}
	var val plan.Validity
	for _, c := range changes {
		if c.Deleted || (c.Ref.Kind != reference.ConfigMap && c.Ref.Kind != reference.Secret) {
			continue
		}
		ns := c.Ref.Namespace
		if ns == "" {
			ns = obj.GetNamespace()
		}
		fs, err := g.Check(ctx, c.Ref.Kind, ns, c.Ref.Name)
		if err != nil {
			return plan.Validity{}, err
		}
		if len(fs) > 0 {
			val.Failed = append(val.Failed, fmt.Sprintf("%s/%s: %s", c.Ref.Kind, c.Ref.Name, validate.Summary(fs, 3)))
			continue
		}
		for _, other := range shared {
			// Only a copy with the same content is the same change set.
			o, ok, err := r.Options.Store.Get(ctx, c.Ref.Kind, other, c.Ref.Name)
			if err != nil || !ok {
				continue
			}
			if o.Data().ReloaderSHA1 != c.ReloaderSHA1 {
				// A replicator writes the copies one after the other: a
				// copy that a Validator checks and that does not hold this
				// content yet may be about to.
				if sel, err := g.Selects(ctx, c.Ref.Kind, other, c.Ref.Name); err != nil {
					return plan.Validity{}, err
				} else if sel {
					val.Awaited = append(val.Awaited, fmt.Sprintf("%s/%s in namespace %s", c.Ref.Kind, c.Ref.Name, other))
				}
				continue
			}
			fs, err := g.Check(ctx, c.Ref.Kind, other, c.Ref.Name)
			if err != nil {
				return plan.Validity{}, err
			}
			if len(fs) > 0 {
				val.Failed = append(val.Failed, fmt.Sprintf("%s/%s in namespace %s (the same change set): %s", c.Ref.Kind, c.Ref.Name, other, validate.Summary(fs, 3)))
				break
			}
		}
	}
	return val, nil
}
