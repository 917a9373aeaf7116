package delivery

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestHealth(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	deployment := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "ns", "generation": int64(2)},
			"spec":     map[string]any{"replicas": int64(2), "progressDeadlineSeconds": int64(60)},
			"status":   status,
		}}
	}
	cond := func(typ, st, reason string) map[string]any {
		return map[string]any{"type": typ, "status": st, "reason": reason}
	}
	complete := map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{cond("Progressing", "True", "NewReplicaSetAvailable"), cond("Available", "True", "MinimumReplicasAvailable")}}
	rolling := map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(1), "readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{cond("Progressing", "True", "ReplicaSetUpdated"), cond("Available", "True", "MinimumReplicasAvailable")}}
	exceeded := map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updatedReplicas": int64(0), "readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{cond("Progressing", "False", "ProgressDeadlineExceeded"), cond("Available", "True", "MinimumReplicasAvailable")}}
	stale := map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{cond("Progressing", "True", "NewReplicaSetAvailable"), cond("Available", "True", "MinimumReplicasAvailable")}}
	cases := map[string]struct {
		obj *unstructured.Unstructured
		// deadline after the rollout started at t0, judged at now.
		deadline time.Duration
		now      time.Time
		want     State
	}{
		"complete and available":                    {deployment(complete), time.Minute, t0.Add(10 * time.Second), Current},
		"rolling within the deadline":               {deployment(rolling), time.Minute, t0.Add(10 * time.Second), InProgress},
		"rolling past the deadline":                 {deployment(rolling), time.Minute, t0.Add(time.Minute), Failed},
		"the Deployment's ProgressDeadlineExceeded": {deployment(exceeded), time.Hour, t0.Add(10 * time.Second), Failed},
		"status not caught up with the generation":  {deployment(stale), time.Minute, t0.Add(10 * time.Second), InProgress},
		"a custom resource with Ready True": {&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Operand", "metadata": map[string]any{"name": "o", "generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True", "Ready")}},
		}}, time.Minute, t0.Add(10 * time.Second), Current},
		"a custom resource Stalled": {&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Operand", "metadata": map[string]any{"name": "o", "generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Stalled", "True", "Broken")}},
		}}, time.Minute, t0.Add(10 * time.Second), Failed},
	}
	for name, c := range cases {
		got, signal := Health(c.obj, t0, c.deadline, c.now)
		if got != c.want {
			t.Errorf("%s: %s (%s), want %s", name, got, signal, c.want)
		}
		if got == Failed && signal == "" {
			t.Errorf("%s: failed without a signal", name)
		}
	}
}
