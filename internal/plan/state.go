package plan

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
)

// ReasonForgedState is a Warning Event: a state annotation of Reroll's
// (SignedState) on the workload does not carry
// Reroll's signature: someone else wrote it, or an older Reroll that did
// not sign. It is ignored (it neither holds a rollout nor counts against
// the concurrent rollout bound) and removed.
const ReasonForgedState = "ForgedState"

// signatureSep separates a state annotation's value from its signature:
// "<value> sig=<digest.Key.StateMAC>".
const signatureSep = " sig="

// SignedState lists the state annotations Reroll signs: those that other
// workloads' rollouts depend on (the concurrent rollout bound's queue and
// running set; a change set's record, which holds or releases the next wave
// and trips the breaker; the storm breaker's latest rollouts), so a tenant
// must not be able to write them.
var SignedState = []string{PendingAnnotation, RolledAtAnnotation, delivery.MemberAnnotation, delivery.RolloutsAnnotation}

// Sign returns value signed as annotation name of the workload uid:
// "<value> sig=<32 hex characters>".
func Sign(k digest.Key, uid, name, value string) string {
	return value + signatureSep + k.StateMAC(uid, name, value)
}

// Verified returns the value of state annotation name on the workload uid
// with annotations, without its signature, when Reroll signed it under k;
// ok is false when the annotation is absent, unsigned (written by an older
// Reroll, or by hand) or signed for another object, annotation or value.
func Verified(k digest.Key, uid, name string, annotations map[string]string) (value string, ok bool) {
	value, ok, _ = verified(k, uid, name, annotations)
	return value, ok
}

// verified is Verified, and whether the signature is today's: false for
// one a Reroll before the v2 key derivation made, which verifies until
// the migration deadline (digest.Key.VerifyStateMAC) and is signed again.
func verified(k digest.Key, uid, name string, annotations map[string]string) (value string, ok, current bool) {
	v, has := annotations[name]
	if !has {
		return "", false, false
	}
	i := strings.LastIndex(v, signatureSep)
	if i < 0 {
		return "", false, false
	}
	value, mac := v[:i], v[i+len(signatureSep):]
	if ok, current = k.VerifyStateMAC(uid, name, value, mac); !ok {
		return "", false, false
	}
	return value, true, current
}

// Displayed is the value of state annotation name in annotations without
// its signature, unchecked: for what a user is shown (the kubectl plugin
// cannot read the installation key), never for a decision of Reroll's own
// (Verified).
func Displayed(annotations map[string]string, name string) string {
	v := annotations[name]
	if i := strings.LastIndex(v, signatureSep); i >= 0 {
		v = v[:i]
	}
	return v
}

// forged reports the state annotations of in that are present but do not
// verify; each gets a Warning Event and is removed unless the plan writes
// it anew. Without a key (the zero Key: tests, and the kubectl plugin,
// which never reads the installation key and so cannot tell) it judges
// nothing.
func (p *Plan) forged(o Options, in Input) {
	if o.Key.ID() == "" {
		return
	}
	for _, name := range SignedState {
		if _, has := in.Annotations[name]; !has {
			continue
		}
		if v, ok, current := verified(o.Key, in.UID, name, in.Annotations); ok {
			if _, writes := p.Annotations[name]; !current && !writes {
				// Signed before the v2 key derivation: signed again,
				// unchanged, before its deadline.
				p.Annotations[name] = Sign(o.Key, in.UID, name, v)
			}
			continue
		}
		if _, writes := p.Annotations[name]; !writes {
			p.Annotations[name] = ""
		}
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonForgedState,
			"Ignoring and removing " + name + ": Reroll did not write it (no valid signature); it neither holds nor counts a rollout"})
	}
}
