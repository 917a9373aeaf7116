package halts

import (
	"bytes"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
)

func key(t *testing.T, b byte) digest.Key {
	t.Helper()
	k, err := digest.NewKey(bytes.Repeat([]byte{b}, digest.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A halt record counts only as Reroll signed it, in the ConfigMap of its
// own set: a tenant can neither write a halt nor move one to another set;
// an operator's resume beside it releases exactly the halt it names.
func TestVerify(t *testing.T) {
	k := key(t, 1)
	rotated, err := key(t, 2).WithPrevious(bytes.Repeat([]byte{1}, digest.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	halted := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	h := delivery.Halt{Halted: halted, Failed: []string{"Deployment/canary/web"}, Signal: "Progress deadline exceeded"}
	signed := func() *corev1.ConfigMap { return ConfigMap(k, "reroll", "reroll-change-sets", "set-a", h) }
	resume := func(at time.Time, of time.Time) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) {
			cm.Data[ResumeKey] = `{"halted":"` + of.Format(time.RFC3339) + `","at":"` + at.Format(time.RFC3339) + `"}`
		}
	}
	cases := map[string]struct {
		// cm is the ConfigMap read, changed by edit (nil: none).
		cm   func() *corev1.ConfigMap
		edit func(*corev1.ConfigMap)
		// k is the key Reroll verifies under.
		k digest.Key
		// wantErr is ErrNotSigned, or nil; active and resumed what the
		// verified record says.
		wantErr error
		active  bool
		resumed time.Time
	}{
		"signed by Reroll: it halts": {cm: signed, k: k, active: true},
		"no signature (written by hand, or by a Reroll that did not sign)": {cm: signed, k: k, wantErr: ErrNotSigned,
			edit: func(cm *corev1.ConfigMap) { delete(cm.Data, SignatureKey) }},
		"the record changed after signing": {cm: signed, k: k, wantErr: ErrNotSigned,
			edit: func(cm *corev1.ConfigMap) {
				cm.Data[DataKey] = delivery.Halt{Halted: halted, Failed: []string{"Deployment/prod/web"}}.String()
			}},
		"another set's signed record copied into this set's ConfigMap": {k: k, wantErr: ErrNotSigned,
			cm: func() *corev1.ConfigMap {
				cm := ConfigMap(k, "reroll", "reroll-change-sets", "set-b", h)
				cm.Name = Name("reroll-change-sets", "set-a")
				return cm
			}},
		"signed under another installation's key":  {cm: signed, k: key(t, 3), wantErr: ErrNotSigned},
		"signed under the key a rotation replaced": {cm: signed, k: rotated, active: true},
		"resumed by an operator":                   {cm: signed, k: k, edit: resume(halted.Add(time.Minute), halted), resumed: halted.Add(time.Minute)},
		"resumed by an operator whose clock lags: at the halt, not before": {cm: signed, k: k,
			edit: resume(halted.Add(-time.Minute), halted), resumed: halted},
		"a resume of an earlier halt of the set releases this one not": {cm: signed, k: k,
			edit: resume(halted.Add(time.Minute), halted.Add(-time.Hour)), active: true},
		"a damaged resume releases nothing": {cm: signed, k: k, active: true,
			edit: func(cm *corev1.ConfigMap) { cm.Data[ResumeKey] = "now" }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cm := c.cm()
			if c.edit != nil {
				c.edit(cm)
			}
			got, err := Verify(c.k, cm)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: error %v, want %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if got.Active() != c.active || !got.Resumed.Equal(c.resumed) {
				t.Errorf("Verify = active %v resumed %s, want active %v resumed %s", got.Active(), got.Resumed, c.active, c.resumed)
			}
		})
	}
}

// Resume writes beside the signed record what Verify applies: the record
// itself stays as Reroll signed it.
func TestResume_KeepsTheSignedRecord(t *testing.T) {
	k := key(t, 1)
	halted := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	cm := ConfigMap(k, "reroll", "reroll-change-sets", "set-a", delivery.Halt{Halted: halted})
	record := cm.Data[DataKey]
	if err := Resume(cm, halted.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	if cm.Data[DataKey] != record {
		t.Errorf("the signed record changed: %s", cm.Data[DataKey])
	}
	h, err := Verify(k, cm)
	if err != nil {
		t.Fatal(err)
	}
	if h.Active() || !h.Resumed.Equal(halted.Add(90*time.Second)) {
		t.Errorf("after Resume: %+v, want resumed at %s", h, halted.Add(90*time.Second))
	}
	if err := Resume(cm, halted.Add(time.Hour)); err == nil {
		t.Error("Resume of a resumed record: no error")
	}
}
