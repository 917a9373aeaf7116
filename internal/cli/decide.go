package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

// decide is Reroll's decision for t: the controller's own planner
// (plan.DecideChange), given the objects the session reads (live, or plan's
// manifests laid over them) instead of the controller's cache. It fails only
// when reading an object fails for a reason other than a missing
// permission.
func (s *session) decide(ctx context.Context, t target) (plan.Plan, error) {
	in := plan.NewInput(t.kind, t.obj, t.template, time.Now())
	p, err := plan.DecideChange(s.planOptions, in, planSource{ctx: ctx, objects: s.objects})
	if err != nil {
		return p, fmt.Errorf("deciding for %s: %w", t, err)
	}
	return p, nil
}

// rebased returns t with Reroll's record replaced by the record the planner
// makes of the live objects, when Reroll's record is keyed: its digests are
// HMACs under the installation key, which the plugin never reads, so they
// cannot be compared with the digests the plugin computes. plan then
// compares the manifests with the live objects, not with what Reroll last
// recorded (a change Reroll has not yet acted on is not shown). The same
// for a workload with no record whose baseline Reroll keeps in its
// baseline ConfigMaps (storedBaseline), keyed too: Reroll compares it with
// that baseline, not by the first-sight rule. A workload with no record
// and no stored baseline, or an unkeyed record, is returned as it is. It
// must be called with no overlay.
func (s *session) rebased(ctx context.Context, t target) (target, error) {
	ann := t.obj.GetAnnotations()
	if ann[plan.RecordAnnotation] == "" {
		if _, _, ok := s.storedBaseline(ctx, t); !ok {
			return t, nil
		}
	} else if ann[plan.KeyAnnotation] == s.planOptions.Key.ID() {
		return t, nil
	}
	live := maps.Clone(ann)
	delete(live, plan.RecordAnnotation)
	delete(live, plan.KeyAnnotation)
	obj := t.obj.DeepCopyObject().(client.Object)
	obj.SetAnnotations(live)
	rt := target{kind: t.kind, obj: obj, template: t.template, pins: t.pins}
	// The record of the live objects, as first sight writes it: without
	// the installation time, the first-sight rule never turns it into a
	// rollout (the workload has a record; the rule is not its question).
	installedAt := s.planOptions.InstalledAt
	s.planOptions.InstalledAt = time.Time{}
	first, err := s.decide(ctx, rt)
	s.planOptions.InstalledAt = installedAt
	if err != nil || first.Outcome != plan.FirstSight {
		return t, err
	}
	live[plan.RecordAnnotation] = first.Record.String()
	obj.SetAnnotations(live)
	return rt, nil
}

// planOptions are the planner's options for the settings s, reading
// annotations as a. The default strategy stands for any: it chooses the
// trigger's form, not whether a workload rolls. The installation time is
// the session's (loadInstalledAt): with it, the first-sight rule applies as
// the controller applies it (a workload with no record rolls for what
// changed after its pod template was last written and after Reroll's
// installation).
func (s Settings) planOptions(a annotation.Config) plan.Options {
	o := plan.DefaultOptions()
	o.ReloadOnCreate, o.ReloadOnDelete = s.ReloadOnCreate, s.ReloadOnDelete
	o.Annotations = a
	return o
}

// planSource is the planner's view (plan.Source) of the objects the session
// reads: digests, annotations, uid and resourceVersion, never values. An
// object the user may not read is plan.ErrUnreadable, which the planner
// counts as unchanged and names in Plan.Unreadable.
type planSource struct {
	ctx     context.Context
	objects *objects
}

// Object implements plan.Source.
func (p planSource) Object(kind reference.Kind, namespace, name string) (plan.Object, bool, error) {
	st := p.objects.get(p.ctx, objectKey{kind: kind, namespace: namespace, name: name})
	switch {
	case !st.known && errors.Is(st.err, errForbidden):
		return plan.Object{}, false, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, plan.ErrUnreadable)
	case !st.known:
		return plan.Object{}, false, st.err
	case !st.exists:
		return plan.Object{}, false, nil
	}
	return plan.Object{Annotations: st.annotations, Data: st.data, UID: st.uid, ResourceVersion: st.resourceVersion, History: st.history}, true, nil
}

// Names implements plan.Source.
func (p planSource) Names(kind reference.Kind, namespace string) ([]string, error) {
	names, err := p.objects.names(p.ctx, kind, namespace)
	if errors.Is(err, errForbidden) {
		return names, fmt.Errorf("%ss in %s: %w", kind, namespace, plan.ErrUnreadable)
	}
	return names, err
}

// considered returns the plan's entry for the object id, if it looked at it.
func considered(p plan.Plan, id string) (plan.Considered, bool) {
	for _, c := range p.Considered {
		if c.Ref.ID() == id {
			return c, true
		}
	}
	return plan.Considered{}, false
}

// undecided reports whether c's selection depends on annotations that could
// not be read: the ignore annotation can drop a selected object, the match
// annotation select one under search.
func undecided(o annotation.OptIn, c plan.Considered) bool {
	if !c.Unreadable {
		return false
	}
	return c.Selected || (o.Search && !c.Listed && c.Rule == plan.RuleNoMatch)
}

// rolls reports whether the plan restarts the workload's pods.
func rolls(p plan.Plan) bool { return p.Outcome == plan.Roll }

// acts reports whether the plan acts on a change: rolls, notifies, or
// records one the kind does not restart for.
func acts(p plan.Plan) bool {
	return p.Outcome == plan.Roll || p.Outcome == plan.NotRolled || p.Outcome == plan.Notify
}
