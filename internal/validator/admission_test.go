package validator

import (
	"slices"
	"testing"

	"github.com/go-logr/logr"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/validate"
)

func TestContentAnswer(t *testing.T) {
	deny := validate.Finding{Validator: "v", Rule: "strict", Key: "a.json", Message: "is not valid JSON", Admission: rerollv1.AdmissionDeny}
	warn := validate.Finding{Validator: "v", Rule: "lenient", Key: "b.json", Message: "is not valid JSON", Admission: rerollv1.AdmissionWarn}
	off := validate.Finding{Validator: "v", Rule: "quiet", Key: "c.json", Message: "is not valid JSON", Admission: rerollv1.AdmissionOff}
	cases := map[string]struct {
		findings []validate.Finding
		// allowed is whether the write goes through.
		allowed bool
		// message is the refusal's message ("" when allowed).
		message string
		// warnings are the admission warnings.
		warnings []string
	}{
		"no finding is admitted without a warning":     {allowed: true},
		"a finding of an Off rule is left to the gate": {findings: []validate.Finding{off}, allowed: true},
		"a finding of a Warn rule is admitted with a warning": {
			findings: []validate.Finding{off, warn}, allowed: true,
			warnings: []string{`reroll: v/lenient: key "b.json" is not valid JSON`},
		},
		"a finding of a Deny rule refuses the write, with the warnings of the Warn rules": {
			findings: []validate.Finding{warn, deny, off}, allowed: false,
			message:  `reroll: ConfigMap ns/cfg fails validation: v/strict: key "a.json" is not valid JSON`,
			warnings: []string{`reroll: v/lenient: key "b.json" is not valid JSON`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := contentAnswer(rerollv1.KindConfigMap, "ns", "cfg", tc.findings, logr.Discard())
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v", resp.Allowed, tc.allowed)
			}
			msg := ""
			if !resp.Allowed && resp.Result != nil {
				msg = resp.Result.Message
			}
			if msg != tc.message {
				t.Errorf("message = %q, want %q", msg, tc.message)
			}
			if !slices.Equal(resp.Warnings, tc.warnings) && len(resp.Warnings)+len(tc.warnings) > 0 {
				t.Errorf("warnings = %q, want %q", resp.Warnings, tc.warnings)
			}
		})
	}
}
