package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/revert"
)

// ReasonRolledBack is a Warning Event: safe delivery saw a versioned
// workload's own rollout fail (the breaker's signal), and Reroll undid it
// to its previous pinned revision, as kubectl rollout undo would; the note
// names the change sets, the signal and the copies restored. The change
// set halts as it does without versioned config; the sources are never
// written.
const ReasonRolledBack = "RolledBack"

// ReasonNotRolledBack is a Warning Event: a versioned workload's rollout
// failed and the automatic undo could not find a previous revision to
// return to (the note says why); the change set halts, and the workload
// keeps its pods, as without versioned config.
const ReasonNotRolledBack = "NotRolledBack"

// Undo is the automatic undo of a failed rollout.
type Undo struct {
	// Template is the pod template to write back: the previous revision,
	// which names copies of the content before the failed change.
	Template *corev1.PodTemplateSpec
	// Restored names the copies it reads, "Kind/copy" (for the Event).
	Restored []string
}

// undoFailed decides the automatic undo of a versioned workload whose own
// rollout safe delivery saw fail in this decision (p.failedNow): when the
// pod template is still the one Reroll's last rollout wrote
// (revert.PatchAnnotation's After) and the revision before it (Before) is
// kept (View.Revision) and names copies Reroll made, the plan writes that
// revision back (Undo) with a ReasonRolledBack Warning Event; else it
// tells why not (ReasonNotRolledBack). Off with Options.NoAutoUndo, and
// for a workload not versioned or whose template Reroll does not write.
func (p *Plan) undoFailed(o Options, in Input, v View) error {
	if p.failedNow == "" || o.NoAutoUndo || in.Restart == nil || !in.Restart.TemplateInObject {
		return nil
	}
	if versioned, _ := pin.Versioned(in.Annotations, in.NamespaceAnnotations, o.Versioned); !versioned {
		return nil
	}
	what := fmt.Sprintf("The rollout of change set %s failed (%s)", strings.Join(p.failedSets, ", "), p.failedNow)
	notUndone := func(why string) {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonNotRolledBack, what + "; not undone: " + why})
	}
	patch, err := revert.ParsePatch(in.Annotations[revert.PatchAnnotation])
	if err != nil || patch == nil {
		notUndone("Reroll has no record of the revision before its rollout")
		return nil
	}
	if !patch.IsAfter(in.Sums(), in.Template) {
		notUndone("the pod template changed since Reroll's rollout")
		return nil
	}
	prev, err := v.Revision(patch.Before)
	if err != nil {
		return err
	}
	if prev == nil {
		notUndone("the previous revision is no longer kept (revisionHistoryLimit), or the kind keeps none Reroll reads")
		return nil
	}
	pins, err := PinsOf(v, o.Key, in.Namespace, prev)
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		notUndone("the previous revision names no copy, so it would read the failed content too")
		return nil
	}
	var restored []string
	for _, r := range slices.SortedFunc(maps.Keys(pins), func(a, b pin.Ref) int { return strings.Compare(a.String(), b.String()) }) {
		restored = append(restored, r.String())
	}
	p.Undo = &Undo{Template: prev, Restored: restored}
	p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonRolledBack,
		what + "; undone to the previous revision, which reads " + strings.Join(restored, ", ") + ". Fix the source and the next change rolls; the change set stays halted until then, or kubectl reroll resume"})
	return nil
}
