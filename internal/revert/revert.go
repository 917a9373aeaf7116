package revert

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/eviction"
)

// PatchAnnotation is the workload metadata annotation where Reroll records
// its last change of the pod template, as JSON:
//
//	{"before":"<fingerprint>","after":"<fingerprint>","at":"<RFC 3339 UTC>"}
//
// A fingerprint is the first 16 hex characters of the SHA-256 of the
// template's JSON encoding (Fingerprint): it tells templates apart and
// says nothing of their content. With "trimmed":true (written since the
// manager's cache keeps a trimmed template, envtrim.Keep), "after" is in
// the form of Sums.Trimmed instead; "before" is always a Fingerprint, the
// form observe.Revision looks for in the workload's revisions.
const PatchAnnotation = "reroll.dev/template-patch"

// RevertedAnnotation is the workload metadata annotation Reroll sets once
// it saw another field manager put back the template it changed:
//
//	{"manager":"<field manager>","at":"<RFC 3339 UTC>"}
//
// While it is set Reroll does not change the workload's pod template. It is
// removed by hand (or by choosing reroll.dev/restart: evict) to let Reroll
// patch again.
const RevertedAnnotation = "reroll.dev/reverted"

// Window is how soon after Reroll's patch a template put back counts as a
// revert. Operators put their template back within seconds; a template
// restored much later is a deliberate change, such as a rollback.
const Window = 5 * time.Minute

// Patch is PatchAnnotation decoded.
type Patch struct {
	// Before and After fingerprint the template before and after Reroll's
	// change.
	Before string `json:"before"`
	After  string `json:"after"`
	// Trimmed is set when After is a Sums.Trimmed fingerprint rather than
	// a Fingerprint.
	Trimmed bool `json:"trimmed,omitempty"`
	// At is when Reroll made the change.
	At time.Time `json:"at"`
}

// Reverted is RevertedAnnotation decoded.
type Reverted struct {
	// Manager is the field manager that put the template back; "" when
	// managedFields did not tell.
	Manager string `json:"manager"`
	// At is when Reroll saw the revert.
	At time.Time `json:"at"`
}

// Fingerprint returns the fingerprint of a pod template (see
// PatchAnnotation).
//
// Long env values count by their digest (envtrim.Values), so a template
// read from the manager's cache, which keeps only that, and the same
// template read from the API server have the same fingerprint.
func Fingerprint(t *corev1.PodTemplateSpec) string {
	sum := sumJSON(fingerprinted(t))
	return hex.EncodeToString(sum[:8])
}

// fingerprinted returns the template whose JSON encoding Fingerprint (and
// SumsOf's Full) hashes: t itself, or, when t has long env values, a copy
// with them as digests (envtrim.Values); t may be the cache's and is never
// changed.
func fingerprinted(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if !longEnvValue(&t.Spec) {
		return t
	}
	c := t.DeepCopy()
	envtrim.Values(&c.Spec)
	return c
}

// longEnvValue reports whether envtrim.Values would change spec: only then
// does Fingerprint pay for a copy of the template (a rollout fingerprints
// its template twice, and the reconcile of its own write once more).
func longEnvValue(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if len(cs[i].Env[j].Value) > envtrim.MaxValue {
					return true
				}
			}
		}
	}
	return false
}

// String encodes p for PatchAnnotation.
func (p Patch) String() string {
	p.At = p.At.UTC().Truncate(time.Second)
	b, _ := json.Marshal(p)
	return string(b)
}

// String encodes r for RevertedAnnotation.
func (r Reverted) String() string {
	r.At = r.At.UTC().Truncate(time.Second)
	b, _ := json.Marshal(r)
	return string(b)
}

// ParsePatch reads PatchAnnotation's value; "" yields nil.
func ParsePatch(v string) (*Patch, error) {
	if v == "" {
		return nil, nil
	}
	var p Patch
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", PatchAnnotation, err)
	}
	return &p, nil
}

// ParseReverted reads RevertedAnnotation's value; "" yields nil. A value
// that is not JSON still counts as a revert (with no manager), so a damaged
// annotation never restarts a patch war.
func ParseReverted(v string) *Reverted {
	if v == "" {
		return nil
	}
	var r Reverted
	_ = json.Unmarshal([]byte(v), &r)
	return &r
}

// Detect reports whether the template whose fingerprint is current is the
// one Reroll changed (p.Before) put back within Window of the change. It is
// pure. A template that differs from both (someone changed something else)
// or that came back later is not a revert.
//
// current is the current template's Fingerprint. For a record whose After
// is in the Trimmed form, After is not compared: current equals Before,
// and Before and After are different templates (recordPatch writes no
// record otherwise), so current is not After.
func Detect(p *Patch, current string, now time.Time) bool {
	if p == nil || (!p.Trimmed && current == p.After) || current != p.Before {
		return false
	}
	return now.Sub(p.At) <= Window
}

// IsAfter reports whether the template t, whose full template's Sums are s
// (t may be that template or its envtrim.Keep), is the one Reroll's change
// recorded in p made: p.After in p's form.
func (p *Patch) IsAfter(s Sums, t *corev1.PodTemplateSpec) bool {
	if p.Trimmed {
		return p.After == s.Trimmed(t)
	}
	return p.After == s.Full
}

// Manager returns the field manager that most recently wrote the object's
// pod template, other than self, from managedFields: the entry with the
// latest time whose fields include a pod template ("f:template"), status
// writes aside. "" when none is found.
func Manager(fields []metav1.ManagedFieldsEntry, self string) string {
	var best string
	var bestTime time.Time
	for _, f := range fields {
		if f.Manager == self || f.Subresource != "" || f.FieldsV1 == nil {
			continue
		}
		if !strings.Contains(string(f.FieldsV1.Raw), `"f:template"`) {
			continue
		}
		var at time.Time
		if f.Time != nil {
			at = f.Time.Time
		}
		if best == "" || !at.Before(bestTime) {
			best, bestTime = f.Manager, at
		}
	}
	return best
}

// Advice is the remedy that the Events about a reverted template suggest.
const Advice = "Annotate the workload " + eviction.RestartAnnotation + ": " + eviction.RestartEvict +
	" to restart its pods by eviction instead, or remove " + RevertedAnnotation + " once the template may be changed again"

// ManagerName names a field manager for an Event: `Field manager "NAME"`,
// or "Another field manager" when managedFields did not tell.
func ManagerName(m string) string {
	if m == "" {
		return "Another field manager"
	}
	return fmt.Sprintf("Field manager %q", m)
}

// Why says, for a workload with RevertedAnnotation value v, why Reroll no
// longer changes its template.
func Why(v string) string {
	m := ""
	if r := ParseReverted(v); r != nil {
		m = r.Manager
	}
	return ManagerName(m) + " put back the pod template Reroll changed. " + Advice
}
