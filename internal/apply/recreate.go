package apply

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/workload"
)

// recreate deletes a Job and creates it again with desired's record,
// through its kind's workload.Roller, the manifest kept in the journal in
// between.
func (w Writer) recreate(ctx context.Context, obj, desired client.Object, write func(ctx context.Context, obj, desired client.Object) error) error {
	roller, ok := w.Kind.(workload.Roller)
	if !ok {
		return fmt.Errorf("%w: kind %s cannot re-create its objects", workload.ErrShape, w.Kind.Name())
	}
	_, err := roller.Roll(ctx, w.Client, workload.Rollout{Original: obj, Desired: desired, Patch: write, Journal: w.Journal})
	return err
}
