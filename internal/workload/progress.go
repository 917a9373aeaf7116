package workload

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/compact"
)

// Progress is what a workload's status says of its latest rollout.
type Progress struct {
	// Done is true when the workload's controller has seen the latest spec
	// and every pod runs the latest template, as `kubectl rollout status`
	// decides it.
	Done bool
	// Failed is true when the workload's controller gave up on the rollout
	// (a Deployment's Progressing condition with reason
	// ProgressDeadlineExceeded).
	Failed bool
	// Deadline is the kind's own limit on a rollout without progress (a
	// Deployment's spec.progressDeadlineSeconds); 0 when the kind has none.
	Deadline time.Duration
}

// Progresser is a Kind whose status reports when a rollout is complete, so
// that a rollout Reroll started can count as running until then
// (--max-concurrent-rollouts) and a change can wait for it
// (reroll.dev/wait-for-rollout).
type Progresser interface {
	// Progress reads obj's status.
	Progress(obj client.Object) Progress
}

// Progress implements Progresser: observedGeneration has caught up, and
// updatedReplicas, availableReplicas and replicas all equal spec.replicas (no
// pod of an old ReplicaSet is left), as `kubectl rollout status` waits for.
func (Deployment) Progress(obj client.Object) Progress {
	d := compact.Expand(obj).(*appsv1.Deployment)
	want := replicas(d.Spec.Replicas)
	s := d.Status
	p := Progress{Done: s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want}
	if d.Spec.ProgressDeadlineSeconds != nil {
		p.Deadline = time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			p.Failed = true
		}
	}
	return p
}

// Progress implements Progresser: observedGeneration has caught up and
// currentRevision equals updateRevision (every pod runs the update
// revision), with all replicas updated.
func (StatefulSet) Progress(obj client.Object) Progress {
	s := compact.Expand(obj).(*appsv1.StatefulSet)
	st := s.Status
	return Progress{Done: st.ObservedGeneration >= s.Generation && st.UpdateRevision != "" &&
		st.CurrentRevision == st.UpdateRevision && st.UpdatedReplicas == replicas(s.Spec.Replicas)}
}

// Progress implements Progresser: observedGeneration has caught up, and
// updatedNumberScheduled and numberAvailable equal desiredNumberScheduled.
func (DaemonSet) Progress(obj client.Object) Progress {
	d := compact.Expand(obj).(*appsv1.DaemonSet)
	s := d.Status
	return Progress{Done: s.ObservedGeneration >= d.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled &&
		s.NumberAvailable == s.DesiredNumberScheduled}
}

// Progress implements Progresser for Argo Rollouts: status.observedGeneration
// (a string in Argo's status) names the current generation and
// status.phase is Healthy; phase Degraded is a failure. Other kinds report
// Done, so they are never counted as running.
func (u Unstructured) Progress(obj client.Object) Progress {
	o, ok := obj.(*unstructured.Unstructured)
	if !u.ArgoRollout || !ok {
		return Progress{Done: true}
	}
	phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
	observed, _, _ := unstructured.NestedString(o.Object, "status", "observedGeneration")
	p := Progress{Done: phase == "Healthy" && observed == strconv.FormatInt(o.GetGeneration(), 10), Failed: phase == "Degraded"}
	if secs, ok, _ := unstructured.NestedInt64(o.Object, "spec", "progressDeadlineSeconds"); ok {
		p.Deadline = time.Duration(secs) * time.Second
	}
	return p
}

// replicas is spec.replicas with the API's default of 1.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
