package cli

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

func TestPlanFor(t *testing.T) {
	cfg := reference.Reference{Kind: reference.ConfigMap, Name: "cfg", All: true}
	other := reference.Reference{Kind: reference.ConfigMap, Name: "other", All: true}
	optIn := annotation.OptIn{Dialect: annotation.DialectReroll, Auto: true}
	cfgChanged := change.Object{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}
	otherChanged := change.Object{Kind: "ConfigMap", Name: "other", Keys: []string{"x"}}
	selected := func(refs ...reference.Reference) []plan.Considered {
		var out []plan.Considered
		for _, r := range refs {
			out = append(out, plan.Considered{Ref: r, Exists: true, Selected: true, Rule: plan.RuleAuto})
		}
		return out
	}
	rolled := func(objs ...change.Object) plan.Plan {
		return plan.Plan{Outcome: plan.Roll, OptIn: optIn, Considered: selected(cfg, other), Change: change.Change{Objects: objs}}
	}
	unchanged := plan.Plan{Outcome: plan.Unchanged, OptIn: optIn, Considered: selected(cfg, other)}
	// The manifests hold ConfigMap cfg in namespace ns.
	overlay := map[objectKey]objectState{{kind: reference.ConfigMap, namespace: "ns", name: "cfg"}: {known: true, exists: true}}
	cases := map[string]struct {
		reads         bool          // the pod template reads cfg
		before, after plan.Plan     // the plans without and with the manifests
		want          *planWorkload // nil: the workload is not reported
	}{
		"a manifest's change rolls it": {
			before: unchanged, after: rolled(cfgChanged),
			want: &planWorkload{Rolls: true, Dialect: "reroll", Changes: []change.Object{cfgChanged}},
		},
		"only a change pending anyway, not the manifests', would roll it": {
			before: rolled(otherChanged), after: rolled(otherChanged),
			want: &planWorkload{Dialect: "reroll", Reason: "ConfigMap/cfg: no key it reads changes; already pending without the manifests: ConfigMap/other changed keys x"},
		},
		"held by --reload-on-create": {
			before: unchanged,
			after: plan.Plan{Outcome: plan.Skipped, OptIn: optIn, Considered: selected(cfg),
				Held: []plan.Diff{{Ref: cfg, Created: true}}, HeldBy: []string{"--reload-on-create"}},
			want: &planWorkload{Dialect: "reroll", Reason: "ConfigMap/cfg: held, Reroll runs without --reload-on-create"},
		},
		"first sight": {
			before: plan.Plan{Outcome: plan.FirstSight, OptIn: optIn, Considered: selected(cfg)},
			after:  plan.Plan{Outcome: plan.FirstSight, OptIn: optIn, Considered: selected(cfg)},
			want:   &planWorkload{Dialect: "reroll", Reason: "no record yet: Reroll takes what it sees first as the baseline, without a rollout"},
		},
		"not opted in, but reads the object": {
			reads:  true,
			before: plan.Plan{Outcome: plan.NotOptedIn}, after: plan.Plan{Outcome: plan.NotOptedIn},
			want: &planWorkload{Reason: "not opted in"},
		},
		"neither reads nor lists a manifest's object": {
			before: plan.Plan{Outcome: plan.Unchanged, OptIn: optIn, Considered: selected(other)},
			after:  plan.Plan{Outcome: plan.Unchanged, OptIn: optIn, Considered: selected(other)},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
			tmpl := &corev1.PodTemplateSpec{}
			if c.reads {
				tmpl.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}
			}
			got, ok := planFor(target{kind: workload.Deployment{}, obj: d, template: tmpl}, c.before, c.after, overlay)
			if c.want == nil {
				if ok {
					t.Errorf("planFor reported %+v, want nothing", got)
				}
				return
			}
			c.want.Workload, c.want.Namespace = "Deployment/web", "ns"
			if !ok || !reflect.DeepEqual(got, *c.want) {
				t.Errorf("planFor = %+v (%v), want %+v", got, ok, *c.want)
			}
		})
	}
}
