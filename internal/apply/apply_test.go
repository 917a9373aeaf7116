package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// TestWritesNothing checks when Writer.Workload may skip its copy and
// patch of the workload: only when the patch would be empty.
func TestWritesNothing(t *testing.T) {
	record := `{"ConfigMap/cfg":{"a":"6b86b273ff34fce1"}}`
	cases := map[string]struct {
		plan plan.Plan // the plan; its Annotations and Labels are set on a Deployment with record and label managed=true
		want bool      // writesNothing's answer
	}{
		"the record as the workload has it (Reroll's own write seen again)": {
			plan: plan.Plan{Outcome: plan.Unchanged, Annotations: map[string]string{plan.RecordAnnotation: record, "gone": ""}, Labels: map[string]string{"managed": "true"}},
			want: true},
		"first sight under --defer-record: no record to write": {
			plan: plan.Plan{Outcome: plan.FirstSight, Annotations: map[string]string{}, Labels: map[string]string{}},
			want: true},
		"a new record": {
			plan: plan.Plan{Outcome: plan.Unchanged, Annotations: map[string]string{plan.RecordAnnotation: `{}`}},
			want: false},
		"an annotation to remove": {
			plan: plan.Plan{Outcome: plan.Unchanged, Annotations: map[string]string{"other": ""}},
			want: false},
		"a label to set": {
			plan: plan.Plan{Outcome: plan.Unchanged, Labels: map[string]string{"managed": "false"}},
			want: false},
		"a rollout, even with the metadata as it is": {
			plan: plan.Plan{Outcome: plan.Roll, Roll: plan.Rolling{Way: workload.ByTemplate}, Annotations: map[string]string{plan.RecordAnnotation: record}},
			want: false},
		"a pause ending": {
			plan: plan.Plan{Outcome: plan.Unchanged, Pause: plan.Pause{Resume: true}},
			want: false},
		"a pause starting": {
			plan: plan.Plan{Outcome: plan.Unchanged, Pause: plan.Pause{Pause: true}},
			want: false},
		"an undo": {
			plan: plan.Plan{Outcome: plan.Unchanged, Undo: &plan.Undo{}},
			want: false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
				Annotations: map[string]string{plan.RecordAnnotation: record, "other": "1"},
				Labels:      map[string]string{"managed": "true"}}}
			if got := writesNothing(d, c.plan); got != c.want {
				t.Errorf("writesNothing = %v, want %v", got, c.want)
			}
		})
	}
}

// BenchmarkWriter_WorkloadWritesNothing measures Writer.Workload on a
// Deployment of the fanout bench profile whose plan finds its metadata as
// it wants it (first sight, the watch event of Reroll's own write, a
// requeue): no request is made, so no client is needed.
func BenchmarkWriter_WorkloadWritesNothing(b *testing.B) {
	record := `{"ConfigMap/shared":{"CONFIG":"6b86b273ff34fce1","FEATURE_FLAGS":"d4735e3a265e16ee","GREETING":"4e07408562bedb8b"}}`
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-shared", Name: "sh-1", ResourceVersion: "4242",
		Annotations: map[string]string{"reloader.stakater.com/auto": "true", plan.RecordAnnotation: record, plan.KeyAnnotation: "0a1b2c3d"}}}
	d.Spec.Template.Labels = map[string]string{"app": "sh-1"}
	d.Spec.Template.Annotations = map[string]string{"reroll.dev/config-hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	p := plan.Plan{Outcome: plan.Unchanged, Annotations: map[string]string{plan.RecordAnnotation: record, plan.KeyAnnotation: "0a1b2c3d"}, Labels: map[string]string{}}
	w := Writer{Kind: workload.Deployment{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Workload(b.Context(), d, p); err != nil {
			b.Fatal(err)
		}
	}
}
