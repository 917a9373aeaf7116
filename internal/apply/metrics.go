package apply

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
)

// The small hooks that Apply calls to feed internal/metrics with what a
// plan did (the watches' and the reconciler's hooks are in
// internal/metrics). None of them changes a decision.

// recordReferences sets the workload's tracked references (nil when it
// opted out).
func (a *Applier) recordReferences(obj client.Object, refs []reference.Reference) {
	var c metrics.Counts
	for _, ref := range refs {
		switch ref.Kind {
		case reference.Secret:
			c.Secrets++
		case reference.ConfigMap:
			c.ConfigMaps++
		}
	}
	a.Metrics.References(client.ObjectKeyFromObject(obj), c)
}

// recordOutcome records how a reconcile that wrote (or had nothing to write)
// ended: a rollout (or its notification, or a change the kind does not
// restart for), a first sight, or a change that rolled nothing.
func (a *Applier) recordOutcome(obj client.Object, p plan.Plan) {
	nn := client.ObjectKeyFromObject(obj)
	switch {
	case p.Outcome == plan.DeferredRollout:
		// Not rolled yet: the change's age keeps counting.
	case len(p.Changes) > 0:
		a.Metrics.Rolled(nn, sourceKinds(p.Changes), p.Outcome == plan.Notify)
	case p.Outcome == plan.Refused:
		a.Metrics.Skipped(nn, metrics.MatchCostExceeded)
	case p.Outcome == plan.FirstSight || p.Outcome == plan.DamagedRecord:
		a.Metrics.Settled(nn)
	case len(p.HeldBy) > 0:
		a.Metrics.Skipped(nn, skipReason(p.HeldBy[len(p.HeldBy)-1]))
	default:
		a.Metrics.Skipped(nn, metrics.NoConsumedKeyChanged)
	}
}

// recordFailure records a rollout whose write or notification failed.
func (a *Applier) recordFailure(obj client.Object, p plan.Plan) {
	a.Metrics.Failed(client.ObjectKeyFromObject(obj), sourceKinds(p.Changes))
}

// skipReason is the reroll_skipped_total reason for a change held back by
// the flag (plan.Plan.HeldBy).
func skipReason(flag string) string {
	switch flag {
	case "--reload-on-create":
		return metrics.CreateNotEnabled
	case "--reload-on-delete":
		return metrics.DeleteNotEnabled
	}
	// A SecretProviderClass status that came or went with a pod.
	return metrics.NoConsumedKeyChanged
}

func sourceKinds(changes []plan.Diff) []string {
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		out = append(out, string(c.Ref.Kind))
	}
	return out
}

// reportRevert counts and logs a revert that plan.Decide recorded in p,
// once p was written.
func (a *Applier) reportRevert(ctx context.Context, p plan.Plan) {
	rv := revert.ParseReverted(p.Annotations[revert.RevertedAnnotation])
	if !p.Reverted || rv == nil {
		return
	}
	metrics.TemplateReverted(a.Kind.Name())
	ctrl.LoggerFrom(ctx).Info("Pod template change reverted by another field manager; no longer changing it", "manager", rv.Manager)
}
