package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BlockedError is the API server's refusal (429 Too Many Requests) to evict
// a pod.
type BlockedError struct {
	// Pod is the pod that was not evicted.
	Pod string
	// Budget is the API server's explanation naming the
	// PodDisruptionBudget that refused ("The disruption budget web needs 2
	// healthy pods and has 2 currently"); empty when the refusal came from
	// something else (API Priority and Fairness).
	Budget string
	// RetryAfter is the delay the API server suggests; 0 when it gives none.
	RetryAfter time.Duration
}

func (e *BlockedError) Error() string {
	if e.Budget != "" {
		return fmt.Sprintf("eviction of pod %s refused by a PodDisruptionBudget: %s", e.Pod, e.Budget)
	}
	return fmt.Sprintf("eviction of pod %s refused: too many requests", e.Pod)
}

// Evict evicts one pod through the policy/v1 Eviction subresource, with a
// precondition on its UID so that a pod re-created under the same name is
// never evicted in its place. A pod that is already gone or replaced counts
// as evicted (nil). A refusal (429, from a PodDisruptionBudget) is a
// *BlockedError; other failures are returned wrapped.
//
// The API server, not Reroll, checks the budgets: since Kubernetes 1.22 it
// names the refusing budget in a status cause of type DisruptionBudget,
// which Evict returns, so Reroll needs no access to PodDisruptionBudgets.
func Evict(ctx context.Context, c client.Client, namespace string, ref PodRef) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ref.Name, UID: ref.UID}}
	uid := ref.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: namespace, Name: ref.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := c.SubResource("eviction").Create(ctx, pod, ev)
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Conflict: the UID precondition failed, the pod was replaced.
		return nil
	case apierrors.IsTooManyRequests(err):
		b := &BlockedError{Pod: ref.Name}
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			if d := status.Status().Details; d != nil {
				b.RetryAfter = time.Duration(d.RetryAfterSeconds) * time.Second
				for _, cause := range d.Causes {
					if cause.Type == policyv1.DisruptionBudgetCause {
						b.Budget = cause.Message
					}
				}
			}
		}
		return b
	}
	return fmt.Errorf("evicting pod %s/%s: %w", namespace, ref.Name, err)
}

// BudgetName returns the name of the PodDisruptionBudget in a BlockedError's
// Budget text, as the API server words it ("The disruption budget NAME
// ..."); "" when the text does not name one.
func BudgetName(budget string) string {
	const prefix = "The disruption budget "
	if !strings.HasPrefix(budget, prefix) {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(budget, prefix), " ")
	return name
}

// RetryDelay is how long to wait before evicting again after a refusal:
// the time blocked so far, at least 1 s (or the API server's suggestion)
// and at most 30 s, so that a short block is retried quickly and a long one
// costs a request every 30 s. It grows with BlockedSince, which lives in
// the record, so a restart of Reroll keeps the backoff.
func RetryDelay(blockedSince, now time.Time, suggested time.Duration) time.Duration {
	d := now.Sub(blockedSince)
	return min(max(d, suggested, time.Second), 30*time.Second)
}
