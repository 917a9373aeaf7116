package observe

import (
	"fmt"
	"sort"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/validate"
)

// Validity implements plan.View: the Validators' verdict on the new
// content of changes (validator.Gate.Check, one GET per content, cached),
// and, in a namespace that shares change sets (a Namespace wave), on the
// copies with the same content in the other shared namespaces, so that an
// invalid copy anywhere holds the whole set. A copy that a Validator checks
// and that does not hold this content yet is Awaited. The zero Validity
// when validation is off.
func (v workloadView) Validity(changes []plan.Diff) (plan.Validity, error) {
	d, ctx, obj := v.d, v.Ctx, v.obj
	g := d.Validation
	if g == nil {
		return plan.Validity{}, nil
	}
	var shared []string
	if d.Sets != nil && d.Sets.ReadsNamespaces() {
		order, err := d.Sets.Waves(ctx, v.now)
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
			o, ok, err := d.Store.Get(ctx, c.Ref.Kind, other, c.Ref.Name)
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
