package scope

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reroll/reroll/internal/workload"
)

// ErrNotServed marks a kind whose API the cluster does not serve.
var ErrNotServed = errors.New("API not served")

// Available checks that the API server serves kind and that Reroll may
// list, watch and patch it (in each namespace of the scope, or cluster-wide),
// so that one missing CRD or permission costs one log line instead of a
// controller that never syncs. It returns an error wrapping ErrNotServed,
// or one naming the missing permission.
func (s Scope) Available(ctx context.Context, mgr ctrl.Manager, kind workload.Kind) error {
	gvk, err := apiutil.GVKForObject(kind.New(), mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("kind %s: %w", kind.Name(), err)
	}
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: %s", ErrNotServed, gvk.String())
	}
	if err != nil {
		return fmt.Errorf("discovering %s: %w", gvk.String(), err)
	}
	return s.Permitted(ctx, mgr.GetClient(), gvk.Group, mapping.Resource.Resource, "list", "watch", "patch")
}

// Permitted checks, with SelfSubjectAccessReviews made through c, that
// Reroll may use verbs
// on resource of group in each namespace of the scope (or cluster-wide); the
// error names the first missing permission. A resource "pods/eviction"
// names a subresource.
func (s Scope) Permitted(ctx context.Context, c client.Client, group, resource string, verbs ...string) error {
	resource, subresource, _ := strings.Cut(resource, "/")
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, verb := range verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: subresource,
				},
			}}
			if err := c.Create(ctx, review); err != nil {
				return fmt.Errorf("checking permission to %s %s: %w", verb, resource, err)
			}
			if !review.Status.Allowed {
				where := "cluster-wide"
				if ns != "" {
					where = "in namespace " + ns
				}
				name := resource
				if subresource != "" {
					name += "/" + subresource
				}
				return fmt.Errorf("missing RBAC permission: %s on %s (group %q) %s", verb, name, group, where)
			}
		}
	}
	return nil
}

// EvictionAllowed checks, through c, the permissions a restart by eviction needs: list
// and watch pods, create pods/eviction. Without them Reroll does not watch
// pods, and workloads that ask for eviction are told so by an Event.
func (s Scope) EvictionAllowed(ctx context.Context, c client.Client) error {
	if err := s.Permitted(ctx, c, "", "pods", "list", "watch"); err != nil {
		return err
	}
	return s.Permitted(ctx, c, "", "pods/eviction", "create")
}
