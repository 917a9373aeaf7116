package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	safe "github.com/reroll/reroll/internal/delivery"
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
	return gate, nil
}

// holdInvalid holds a plan that rolls when the new content of one of its
// changed ConfigMaps or Secrets fails a Validator's rule (hold reason
// validator.HoldInvalid), before safe delivery lets the workload join a
// change set: nothing rolls for that content, in any wave. In a namespace
// that shares change sets (a Namespace wave), the copies of the object with
// the same content in the other shared namespaces are checked too, so an
// invalid copy anywhere holds the whole set. The Warning Event
// InvalidContent goes on the workload when the hold starts.
func (r *WorkloadReconciler) holdInvalid(ctx context.Context, obj client.Object, in plan.Input, opts plan.Options, p *plan.Plan) error {
	g := r.validation
	if g == nil || p.Outcome != plan.Roll || opts.Overridden(in) {
		return nil
	}
	var shared []string
	if r.changeSets != nil && r.changeSets.readNamespaces {
		order, err := r.changeSets.waves(ctx, in.Now)
		if err != nil {
			return err
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
	var failed, awaited []string
	for _, c := range p.Changes {
		if c.Deleted || (c.Ref.Kind != reference.ConfigMap && c.Ref.Kind != reference.Secret) {
			continue
		}
		ns := c.Ref.Namespace
		if ns == "" {
			ns = obj.GetNamespace()
		}
		fs, err := g.Check(ctx, c.Ref.Kind, ns, c.Ref.Name)
		if err != nil {
			return err
		}
		if len(fs) > 0 {
			failed = append(failed, fmt.Sprintf("%s/%s: %s", c.Ref.Kind, c.Ref.Name, validate.Summary(fs, 3)))
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
					return err
				} else if sel {
					awaited = append(awaited, fmt.Sprintf("%s/%s in namespace %s", c.Ref.Kind, c.Ref.Name, other))
				}
				continue
			}
			fs, err := g.Check(ctx, c.Ref.Kind, other, c.Ref.Name)
			if err != nil {
				return err
			}
			if len(fs) > 0 {
				failed = append(failed, fmt.Sprintf("%s/%s in namespace %s (the same change set): %s", c.Ref.Kind, c.Ref.Name, other, validate.Summary(fs, 3)))
				break
			}
		}
	}
	since := plan.PendingSince(opts.Key, in.UID, in.Annotations, in.Now)
	if len(failed) == 0 && len(awaited) > 0 {
		// Before the first wave rolls, the copies that Validators check
		// get the change set's window to receive the same content.
		window := r.Options.ChangeSetWindow
		if window <= 0 {
			window = safe.DefaultWindow
		}
		if until := since.Add(window); in.Now.Before(until) {
			p.Hold(opts, in, plan.Deferral{Reason: plan.DeferReason(safe.HoldWave), Since: since, Until: until,
				Detail: "waiting for the copies that Validators check to receive the same content: " + strings.Join(awaited, ", ")})
		}
		return nil
	}
	if len(failed) == 0 {
		return nil
	}
	detail := "the new content fails validation: " + strings.Join(failed, "; ")
	p.Hold(opts, in, plan.Deferral{Reason: plan.DeferReason(validator.HoldInvalid), Detail: detail, Since: since})
	if len(p.Events) > 0 {
		// The pending mark changed: told once, as a Warning.
		p.Events = append(p.Events, plan.Event{Type: corev1.EventTypeWarning, Reason: validator.ReasonInvalidContent,
			Note: "Held, nothing rolls: " + detail + "; it rolls once the content changes to content that passes"})
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Holding a rollout: the new content fails validation", "detail", detail)
	return nil
}
