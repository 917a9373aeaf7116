package controller

import (
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/compact"
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

// Issue #36: client-go's indexer computes the index values of the copy an
// update replaces again, to remove them. The reference index kept no
// values, so each update of a cached Deployment decoded two pod templates
// (the replaced copy's and the new one's); the values are now kept with
// the compact copy, and the replaced copy's cost nothing.
func TestIndexReferences_TheReplacedCopyIsNotDecodedAgain(t *testing.T) {
	g := gomega.NewWithT(t)
	r := &WorkloadReconciler{Kind: workload.Deployment{}, Options: Options{PlanOptions: plan.Options{Annotations: annotation.DefaultConfig()}}}
	d := deployment("ns", "web", map[string]string{"reloader.stakater.com/auto": "true"}, podSpec(envFrom("cfg")))
	want := r.indexReferences(d.DeepCopy())
	g.Expect(want).To(gomega.ConsistOf("ConfigMap/cfg"))
	w, ok := compact.From(d.DeepCopy())
	g.Expect(ok).To(gomega.BeTrue())
	// The compact copy's values, on its first call (the update that adds
	// it) and when it is replaced, are the typed object's.
	g.Expect(r.indexReferences(w)).To(gomega.Equal(want))
	g.Expect(r.indexReferences(w)).To(gomega.Equal(want))
	// Computing them decodes the template (allocates) ...
	g.Expect(testing.AllocsPerRun(20, func() { r.referencesOf(w) })).To(gomega.BeNumerically(">", 0))
	// ... which the index function no longer does for a copy it has seen.
	g.Expect(testing.AllocsPerRun(20, func() { r.indexReferences(w) })).To(gomega.BeZero())
}
