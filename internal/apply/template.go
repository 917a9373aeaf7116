package apply

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// template sets the trigger in desired's pod template (plan.ByTemplate),
// and records the change for revert detection.
func (w Writer) template(obj, desired client.Object, roll plan.Rolling) error {
	t, err := w.Kind.PodTemplate(desired)
	if err != nil {
		return err
	}
	if err := roll.Trigger.Set(t); err != nil {
		return err
	}
	if err := w.Kind.SetPodTemplate(desired, t); err != nil {
		return err
	}
	w.recordPatch(obj, desired)
	return nil
}

// recordPatch writes into desired, whose pod template Reroll is about to
// change, the record revert.Detect reads: the Fingerprint of the template
// before (in obj) and the Trimmed fingerprint of the template after (in
// desired), both from the Sums of obj's full template (held with a cached
// copy, whose template is trimmed, or computed from a template read from
// the API server). Reroll's change touches only what envtrim.Keep keeps,
// so the part the cache dropped is the same before and after; an undo
// writes back a revision whose dropped part its fingerprint proved the
// same.
func (w Writer) recordPatch(obj, desired client.Object) {
	if !workload.TemplateInObject(w.Kind, obj) {
		return
	}
	before, err1 := w.Kind.PodTemplate(obj)
	after, err2 := w.Kind.PodTemplate(desired)
	if err1 != nil || err2 != nil {
		return
	}
	s := revert.Held(obj, before)
	p := revert.Patch{Before: s.Full, After: s.Trimmed(after), Trimmed: true, At: w.now()}
	if s.Trimmed(before) != p.After {
		workload.SetAnnotation(desired, revert.PatchAnnotation, p.String())
	}
}
