package plan

import (
	"time"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// DecideAcrossKeys is Decide for a workload whose record may name an older
// key: src reads under opts.Key; older returns the Source that reads under
// k, one of opts.Key.Older() (values read again and digested under k);
// legacyUntil is the migration deadline of the legacy digest scheme.
//
// A record made under an older key (digest.Key.Older: during a rotation,
// the previous key; before legacyUntil only, the legacy scheme of the
// current or previous key, digests of the value alone, by a Reroll before
// digests were bound to their place) is compared under that key first: a
// change made while Reroll was upgraded, or its key rotated, still rolls.
// The record written is always the current key's: no digest of an older
// scheme is ever written (the legacy scheme, bound to no place, would
// publish the HMAC of a value a tenant chose). Once nothing under the
// older key is left to act on, the record is made again under the current
// key, as Decide does for a record of another key, which rolls nothing.
func DecideAcrossKeys(opts Options, in Input, src Source, older func(k digest.Key) Source, legacyUntil time.Time) (Plan, error) {
	var record *digest.Key
	for _, k := range opts.Key.Older() {
		if k.IsLegacy() && !in.Now.Before(legacyUntil) {
			// Past the migration deadline: a record that names the legacy
			// scheme now is a tenant's, or was missed; it counts as a
			// record of another key.
			continue
		}
		if in.Annotations[KeyAnnotation] == k.ID() {
			record = &k
			break
		}
	}
	if record == nil {
		return Decide(opts, in, src)
	}
	lo := opts
	lo.Key = *record
	p, err := Decide(lo, in, older(*record))
	if err != nil {
		return p, err
	}
	switch p.Outcome {
	case Unchanged, Skipped, DamagedRecord:
		// Nothing left to roll under the older key.
		return Decide(opts, in, src)
	}
	// Everything written that derives from digests is the current key's:
	// the record, the config hash of the pod template, a Job's name, the
	// notification's hash.
	current, err := Decide(opts, in, src)
	if err != nil {
		return p, err
	}
	if v := p.Annotations[RecordAnnotation]; v != "" {
		if rec := current.Annotations[RecordAnnotation]; rec != "" {
			p.Annotations[RecordAnnotation], p.Annotations[KeyAnnotation] = rec, opts.Key.ID()
			p.Record = current.Record
		} else {
			delete(p.Annotations, RecordAnnotation)
			delete(p.Annotations, KeyAnnotation)
		}
	}
	hash := current.Record.ConfigHash()
	if p.Roll.Trigger.Annotation == trigger.ConfigHashAnnotation {
		p.Roll.Trigger.Value = hash
	}
	if p.Roll.Job != "" {
		p.Roll.Job = workload.JobName(in.Name, hash)
	}
	if p.Notification != nil {
		p.Notification.Hash = hash
	}
	return p, nil
}
