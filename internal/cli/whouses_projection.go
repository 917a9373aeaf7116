package cli

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/reference"
)

// projectionConsumers returns the Projections (reroll.dev/v1alpha1) in the
// session's namespace whose sources read kind/name, as consumers: a change
// of a key they read makes Reroll write their target (docs/projections.md),
// so Rolls is "yes" for those keys. No Projection API (the CRD is not
// installed) gives none; a user who may not list Projections gets a note.
func (s *session) projectionConsumers(ctx context.Context, kind reference.Kind, name string) ([]consumer, []string, error) {
	var list rerollv1alpha1.ProjectionList
	if err := s.client.List(ctx, &list, client.InNamespace(s.namespace)); err != nil {
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
			return nil, nil, nil
		case apierrors.IsForbidden(err):
			return nil, []string{"could not list Projections (forbidden): Projections that read it are not shown"}, nil
		}
		return nil, nil, fmt.Errorf("listing Projections: %w", err)
	}
	var out []consumer
	for _, p := range list.Items {
		c := consumer{
			Workload: "Projection/" + p.Name, Namespace: p.Namespace, OptedIn: true, Dialect: "projection",
			References: []referenceUse{}, Keys: []keyDecision{},
			Rolls: "yes", Rule: "writes " + p.Spec.Target.Kind + "/" + p.Spec.Target.Name,
			ref: objectRef{gvk: rerollv1alpha1.GroupVersion.WithKind("Projection"), namespace: p.Namespace, name: p.Name},
		}
		var keys []string
		for _, src := range p.Spec.Sources {
			sel := src.SecretKeyRef
			if kind == reference.ConfigMap {
				sel = src.ConfigMapKeyRef
			}
			if sel == nil || sel.Name != name {
				continue
			}
			c.References = append(c.References, referenceUse{Via: "projection source " + src.Name, Keys: []string{sel.Key}, Optional: sel.Optional})
			keys = append(keys, sel.Key)
		}
		if len(keys) == 0 {
			continue
		}
		st := s.objects.live(ctx, objectKey{kind: kind, namespace: p.Namespace, name: name})
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			kd := keyDecision{Key: k, Consumed: true, Rolls: "yes"}
			_, kd.Exists = st.data.Keys[k]
			c.Keys = append(c.Keys, kd)
		}
		out = append(out, c)
	}
	return out, nil, nil
}
