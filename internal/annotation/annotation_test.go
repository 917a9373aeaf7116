package annotation

import (
	"testing"

	"github.com/onsi/gomega"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		// workload and template are the metadata and pod template annotations.
		workload, template map[string]string
		// want is the expected opt-in.
		want OptIn
		// wantErrs is the number of malformed values expected.
		wantErrs int
	}{
		"nothing set": {
			want: OptIn{},
		},
		"reloader auto on metadata": {
			workload: map[string]string{ReloaderAuto: "true"},
			want:     OptIn{Auto: true},
		},
		"reroll auto on the pod template": {
			template: map[string]string{Auto: "true"},
			want:     OptIn{Auto: true},
		},
		"auto false opts out": {
			workload: map[string]string{Auto: "false"},
			want:     OptIn{},
		},
		"metadata wins over the pod template": {
			workload: map[string]string{Auto: "false"},
			template: map[string]string{Auto: "true"},
			want:     OptIn{},
		},
		"lists from both dialects merge, trimmed, sorted and unique": {
			workload: map[string]string{
				ReloaderConfigMaps: "b, a,,",
				ConfigMaps:         "a",
				ReloaderSecrets:    "db",
				Secrets:            "tls , db",
			},
			want: OptIn{ConfigMaps: []string{"a", "b"}, Secrets: []string{"db", "tls"}},
		},
		"a malformed boolean is reported and counts as false": {
			workload: map[string]string{Auto: "yes please", ReloaderConfigMaps: "cfg"},
			want:     OptIn{ConfigMaps: []string{"cfg"}},
			wantErrs: 1,
		},
		"a malformed list entry is dropped, the others kept": {
			workload: map[string]string{Secrets: "good,Not_Valid,also-good"},
			want:     OptIn{Secrets: []string{"also-good", "good"}},
			wantErrs: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got, errs := Parse(tc.workload, tc.template)
			g.Expect(got).To(gomega.Equal(tc.want))
			g.Expect(errs).To(gomega.HaveLen(tc.wantErrs))
			g.Expect(got.Enabled()).To(gomega.Equal(tc.want.Auto || len(tc.want.ConfigMaps)+len(tc.want.Secrets) > 0))
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("true", "a,b", "c")
	f.Add("nope", ",,", "Bad_Name")
	f.Fuzz(func(t *testing.T, auto, cms, secrets string) {
		got, _ := Parse(map[string]string{Auto: auto, ConfigMaps: cms, Secrets: secrets}, nil)
		for _, n := range append(got.ConfigMaps, got.Secrets...) {
			if n == "" {
				t.Fatalf("empty name in %#v", got)
			}
		}
	})
}
