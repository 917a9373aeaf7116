package delivery

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Health judges the rollout of u (the workload, with apiVersion and kind
// set, as kstatus dispatches on them) that started at rolled: Failed when
// kstatus says so (a Deployment's ProgressDeadlineExceeded, a Stalled
// condition), or when it is not Current deadline after rolled (the kind's
// own deadline, else --rollout-timeout); Current when kstatus says the
// workload is complete and healthy; InProgress otherwise. The signal says
// what kstatus or the deadline reported.
//
// kstatus asks more of a Deployment than the bound's workload.Progress
// (readyReplicas, the Available condition, NewReplicaSetAvailable): the
// bound counts a rollout as running until its pods are replaced, a wave
// waits until they serve.
func Health(u *unstructured.Unstructured, rolled time.Time, deadline time.Duration, now time.Time) (State, string) {
	res, err := status.Compute(u)
	if err != nil {
		return InProgress, err.Error()
	}
	switch res.Status {
	case status.FailedStatus:
		return Failed, "kstatus Failed: " + res.Message
	case status.CurrentStatus:
		return Current, ""
	}
	if deadline > 0 && !now.Before(rolled.Add(deadline)) {
		return Failed, fmt.Sprintf("not complete within %s (kstatus %s: %s)", deadline, res.Status, res.Message)
	}
	return InProgress, string(res.Status) + ": " + res.Message
}
