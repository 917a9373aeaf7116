package apply

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// restartAt sets spec.restartAt in desired (an Argo Rollout's way to
// restart its pods without a template change).
func restartAt(desired client.Object, roll plan.Rolling) error {
	return workload.SetRestartAt(desired, roll.RestartAt)
}
