package apply

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// job creates a Job from the jobTemplate of obj, the CronJob as it is
// about to be written (with its pinned references, versioned config),
// named by the plan (plan.Rolling.Job, from the config hash) so that a
// retry creates no second Job; the CronJob's record is written after it.
func (w Writer) job(ctx context.Context, obj client.Object, roll plan.Rolling) error {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return fmt.Errorf("%w: %T is not a CronJob", workload.ErrShape, obj)
	}
	return workload.CreateJob(ctx, w.Client, cj, roll.Job)
}
