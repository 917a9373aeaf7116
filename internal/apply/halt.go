package apply

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/changeset"
	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/plan"
)

// halt records the halt of a change set that plan.Decide decided
// (changeset.Sets.Record) and tells of it: a ChangeHalted Warning Event on
// each failed workload and each changed object, and the alert. A halt the
// API refuses holds all the same, from memory, and is told.
func (a *Applier) halt(ctx context.Context, hr plan.HaltRecord) {
	set, h := hr.Set, hr.Halt
	if !a.Sets.Record(ctx, set, h) {
		// Told once, by the reconcile that wrote the halt.
		return
	}
	note := fmt.Sprintf("Halted change set %s after %d failed rollout(s): %s; workloads not yet rolled keep their pods (pending: halted) until kubectl reroll resume, or a newer content supersedes it", set, len(h.Failed), h.Signal)
	ctrl.LoggerFrom(ctx).Info("Halted change set", "changeSet", set, "failed", strings.Join(h.Failed, ","), "signal", h.Signal)
	for _, w := range h.Failed {
		if ref := a.Sets.ObjectRef(ctx, w); ref != nil {
			a.Recorder.Event(ref, corev1.EventTypeWarning, safe.ReasonChangeHalted, note)
		}
	}
	for _, o := range h.Objects {
		if ref := a.Sets.ObjectRef(ctx, o); ref != nil {
			a.Recorder.Event(ref, corev1.EventTypeWarning, safe.ReasonChangeHalted, note)
		}
	}
	if a.Alerter != nil {
		// ALERT_ON_RELOAD: the halt is told where the rollouts are.
		a.Alerter.Alert(ctx, changeset.HaltAlert(set, h))
	}
}
