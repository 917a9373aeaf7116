package plan

import (
	"strconv"
	"strings"
	"testing"

	"github.com/reroll/reroll/internal/annotation"
)

// A namespace of 300 ConfigMaps with 245-character names and a workload
// whose Reloader list holds 64 patterns of about 330 instructions each
// (the security review's CPU case, within the per-entry limit): matching
// every pattern against every name would cost about 1.6e9 units, so the
// plan is refused with a Warning instead of holding a worker.
func TestDecide_RefusesPatternsPastTheMatchBudget(t *testing.T) {
	key := annotation.DefaultNames().ConfigMapReload
	src := memory{}
	for i := range 300 {
		src[cm(strings.Repeat("n", 240)+"-"+strings.Repeat("0", 4-len(itoa(i)))+itoa(i))] = obj(map[string]string{"a": "1"}, nil, "1")
	}
	src[cm("app-config")] = obj(map[string]string{"a": "1"}, nil, "1")
	entries := make([]string, annotation.MaxListEntries)
	for i := range entries {
		entries[i] = "(?:.?){80}#" + strings.Repeat("b", i%10)
	}
	cases := map[string]struct {
		// list is the value of Reloader's ConfigMap list.
		list string
		// want is the outcome on first sight.
		want Outcome
	}{
		"a short pattern is matched against every name": {list: "app-.*", want: FirstSight},
		"64 costly patterns are refused":                {list: strings.Join(entries, ","), want: Refused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Now: now,
				Annotations: map[string]string{key: tc.list}, Template: template(nil)}
			p, err := Decide(defaults(), in, src)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tc.want {
				t.Fatalf("outcome = %s, want %s", p.Outcome, tc.want)
			}
			if tc.want == FirstSight {
				if len(p.References) != 1 || p.References[0].Name != "app-config" {
					t.Errorf("references = %v", p.References)
				}
				return
			}
			if len(p.Annotations) != 0 || len(p.Labels) != 0 {
				t.Errorf("a refused plan writes %v %v", p.Annotations, p.Labels)
			}
			if len(p.Warnings) != 1 || p.Warnings[0].Reason != ReasonInvalidAnnotation || !strings.Contains(p.Warnings[0].Note, key) {
				t.Errorf("warnings = %+v", p.Warnings)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
