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
// change, the record revert.Detect reads: fingerprints of the template
// before (in obj) and after (in desired).
func (w Writer) recordPatch(obj, desired client.Object) {
	if !workload.TemplateInObject(w.Kind, obj) {
		return
	}
	before, err1 := w.Kind.PodTemplate(obj)
	after, err2 := w.Kind.PodTemplate(desired)
	if err1 != nil || err2 != nil {
		return
	}
	p := revert.Patch{Before: revert.Fingerprint(before), After: revert.Fingerprint(after), At: w.now()}
	if p.Before != p.After {
		workload.SetAnnotation(desired, revert.PatchAnnotation, p.String())
	}
}
