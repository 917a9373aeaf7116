package controller

import (
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// The third review (M2): Wave's cross-namespace references, which the plan
// refuses without --allow-cross-namespace-references, were still indexed:
// another namespace's Secret changes reconciled the tenant's workload.
func TestIndexReferences_RefusedCrossNamespaceReferencesAreNotIndexed(t *testing.T) {
	cases := map[string]struct {
		allow bool     // --allow-cross-namespace-references
		want  []string // the index values of the workload
	}{
		"refused: only the own namespace's objects are indexed": {
			want: []string{"ConfigMap/cfg", "Secret/local"},
		},
		"allowed: the other namespace's object is indexed too": {
			allow: true,
			want:  []string{"ConfigMap/cfg", "Secret/local", "Secret/victim/db"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			r := &WorkloadReconciler{Kind: workload.Deployment{}, Options: Options{PlanOptions: plan.Options{Annotations: annotation.DefaultConfig(), AllowCrossNamespaceReferences: c.allow}}}
			d := deployment("tenant", "web", map[string]string{
				annotation.WaveUpdate:       "true",
				annotation.WaveExtraSecrets: "local,victim/db",
			}, podSpec(envFrom("cfg")))
			g.Expect(r.indexReferences(d)).To(gomega.ConsistOf(c.want))
		})
	}
}
