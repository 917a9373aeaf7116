package plan

import (
	"strings"
	"testing"

	"github.com/reroll/reroll/internal/annotation"
)

func TestDecide_CrossNamespaceReferences(t *testing.T) {
	wave := map[string]string{annotation.WaveUpdate: "true", annotation.WaveExtraSecrets: "other/db,local"}
	src := memory{
		"Secret/other/db": obj(map[string]string{"password": "p"}, nil, "1"),
		secret("local"):   obj(map[string]string{"k": "v"}, nil, "1"),
		cm("cfg"):         obj(map[string]string{"a": "1"}, nil, "1"),
	}
	cases := map[string]struct {
		// allow is --allow-cross-namespace-references.
		allow bool
		// wantOther says whether the other namespace's Secret is recorded.
		wantOther bool
		// wantWarnings is how many CrossNamespaceReference Warnings the
		// first sight emits.
		wantWarnings int
	}{
		"refused by default":    {wantOther: false, wantWarnings: 1},
		"followed when allowed": {allow: true, wantOther: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.AllowCrossNamespaceReferences = tc.allow
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", Annotations: wave, Template: template([]string{"cfg"}), Now: now}
			p, err := DecideChange(o, in, src)
			if err != nil {
				t.Fatal(err)
			}
			rec := p.Annotations[RecordAnnotation]
			if got := strings.Contains(rec, "other"); got != tc.wantOther {
				t.Errorf("record %s names the other namespace: %v, want %v", rec, got, tc.wantOther)
			}
			if !strings.Contains(rec, "Secret/local") {
				t.Errorf("record %s lacks the workload's own Secret: the rest still applies", rec)
			}
			var warnings int
			for _, e := range p.Warnings {
				if e.Reason == ReasonCrossNamespaceReference {
					warnings++
					if !strings.Contains(e.Note, "Secret other/db") {
						t.Errorf("warning %q does not name the reference", e.Note)
					}
				}
			}
			if warnings != tc.wantWarnings {
				t.Errorf("%d warnings, want %d", warnings, tc.wantWarnings)
			}
			// Once recorded, the same state emits no further Warning.
			in.Annotations = map[string]string{annotation.WaveUpdate: "true", annotation.WaveExtraSecrets: "other/db,local", RecordAnnotation: rec}
			again, err := DecideChange(o, in, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range again.Warnings {
				if e.Reason == ReasonCrossNamespaceReference {
					t.Errorf("a second Warning for an unchanged record")
				}
			}
		})
	}
}
