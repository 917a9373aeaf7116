package plan

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// restart decides how the workload restarts beyond the trigger: for a
// restart by eviction (the plan rolls ByEviction, or one is under way) the
// eviction decision (Eviction), whose record goes into Annotations so that
// it is written with the record of the change; for a workload restarted by
// its template, whether an operator put Reroll's last template change
// back (checkRevert).
func (p *Plan) restart(o Options, in Input, v View) error {
	r := in.Restart
	if len(r.Problems) > 0 {
		p.Problems = append(p.Problems, r.Problems...)
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring malformed annotations: " + errors.Join(r.Problems...).Error()})
	}
	switch {
	case p.Outcome == NotOptedIn:
		// Opted out: a restart under way ends with the record.
		p.Annotations[eviction.ProgressAnnotation] = ""
		return nil
	case !r.Mode.Evict:
		p.Annotations[eviction.ProgressAnnotation] = ""
		return p.checkRevert(in, v)
	case o.NoEviction:
		// DecideChange said why nothing restarts.
		p.Annotations[eviction.ProgressAnnotation] = ""
		return nil
	}
	var c *eviction.Change
	if p.Outcome == Roll && p.Roll.Way == workload.ByEviction {
		c = &eviction.Change{Hash: p.Record.ConfigHash(), At: in.Now}
	}
	ev, err := p.decideEviction(in, v, c)
	if err != nil {
		return err
	}
	if len(ev.Evict) > 0 || ev.Done {
		// Evict and finish only from the current record: a cache behind
		// Reroll's last write would evict a pod again or report the end
		// twice. A conflict re-reads the workload.
		if err := v.Current(); err != nil {
			return err
		}
	}
	p.Annotations[eviction.ProgressAnnotation] = ev.Progress.String()
	p.Eviction = &ev
	return nil
}

// decideEviction returns the decision of a restart by eviction, from the
// record of the one under way and the workload's pods; change is the
// change seen now, nil when none.
func (p *Plan) decideEviction(in Input, v View, change *eviction.Change) (eviction.Decision, error) {
	progress, err := eviction.ParseProgress(in.Annotations[eviction.ProgressAnnotation])
	if err != nil {
		// A damaged record cannot say which pods are left; a restart is
		// started again only by the next change, never guessed.
		p.Problems = append(p.Problems, err)
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, err.Error() + "; dropping it"})
	}
	if progress == nil && change == nil {
		return eviction.Decision{}, nil
	}
	pods, err := v.Pods()
	if err != nil {
		return eviction.Decision{}, err
	}
	r := in.Restart
	return eviction.Decide(eviction.Input{Pods: pods, Progress: progress, Change: change, Desired: r.Desired,
		MaxUnavailable: r.Mode.MaxUnavailable, HighestOrdinalFirst: r.HighestOrdinalFirst}), nil
}

// checkRevert detects a revert of Reroll's last pod template change
// (revert.Detect on revert.PatchAnnotation) and, when it finds one,
// records who reverted it in revert.RevertedAnnotation, drops
// PatchAnnotation and tells of it (ReasonTemplateReverted, once the record
// is written: a write retried after a conflict must not tell twice).
// Only a suspected revert costs a read (View.Latest). Once
// RevertedAnnotation is set, workload.ActionOf stops the template changes.
func (p *Plan) checkRevert(in Input, v View) error {
	if revert.ParseReverted(in.Annotations[revert.RevertedAnnotation]) != nil {
		return nil
	}
	patch, err := revert.ParsePatch(in.Annotations[revert.PatchAnnotation])
	if err != nil {
		// A damaged record only loses the detection of one revert.
		p.Annotations[revert.PatchAnnotation] = ""
		return nil
	}
	// The fingerprint (the template's JSON, hashed) is computed only for a
	// patch that Detect can still count: one recorded within revert.Window.
	if patch == nil || in.Now.Sub(patch.At) > revert.Window || !in.Restart.TemplateInObject ||
		!revert.Detect(patch, in.Sums().Full, in.Now) {
		return nil
	}
	if len(in.Pins) > 0 {
		// The template put back names copies: an undo to an older pinned
		// version (kubectl rollout undo), the user's choice, which Reroll
		// keeps until the source changes again. A GitOps re-apply of the
		// manifest names the sources, and is still a revert.
		p.Annotations[revert.PatchAnnotation] = ""
		return nil
	}
	annotations, managers, err := v.Latest()
	if err != nil {
		return err
	}
	if revert.ParseReverted(annotations[revert.RevertedAnnotation]) != nil {
		// Recorded already; the cache is behind that write.
		return nil
	}
	rv := revert.Reverted{Manager: revert.Manager(managers, workload.FieldManager), At: in.Now}
	p.Annotations[revert.RevertedAnnotation] = rv.String()
	p.Annotations[revert.PatchAnnotation] = ""
	p.Reverted = true
	p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonTemplateReverted,
		fmt.Sprintf("%s put back the pod template Reroll changed %s ago; Reroll no longer changes this template. %s",
			revert.ManagerName(rv.Manager), in.Now.Sub(patch.At).Round(time.Second), revert.Advice)})
	return nil
}
