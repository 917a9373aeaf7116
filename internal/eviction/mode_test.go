package eviction

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseMode(t *testing.T) {
	cases := map[string]struct {
		// annotations are the workload's.
		annotations map[string]string
		// desired is its number of desired pods.
		desired int
		// want is the mode read.
		want Mode
		// problems is how many errors are expected.
		problems int
	}{
		"no annotation: template, one at a time": {annotations: nil, desired: 3, want: Mode{MaxUnavailable: 1}},
		"template":                               {annotations: map[string]string{RestartAnnotation: "template"}, want: Mode{MaxUnavailable: 1}},
		"evict":                                  {annotations: map[string]string{RestartAnnotation: "evict"}, want: Mode{Evict: true, MaxUnavailable: 1}},
		"unknown restart value: template, and said": {annotations: map[string]string{RestartAnnotation: "delete"}, want: Mode{MaxUnavailable: 1}, problems: 1},
		"max-unavailable 2": {
			annotations: map[string]string{RestartAnnotation: "evict", MaxUnavailableAnnotation: "2"}, desired: 5,
			want: Mode{Evict: true, MaxUnavailable: 2},
		},
		"max-unavailable 50% of 5 rounds down to 2": {
			annotations: map[string]string{MaxUnavailableAnnotation: "50%"}, desired: 5,
			want: Mode{MaxUnavailable: 2},
		},
		"max-unavailable 10% of 3 is at least 1": {
			annotations: map[string]string{MaxUnavailableAnnotation: "10%"}, desired: 3,
			want: Mode{MaxUnavailable: 1},
		},
		// The security review: 0 evicted a pod silently, 1000% passed.
		"max-unavailable 0: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "0"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
		"max-unavailable 0%: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "0%"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
		"max-unavailable 1000%: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "1000%"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
		"max-unavailable 100% is every pod": {
			annotations: map[string]string{MaxUnavailableAnnotation: "100%"}, desired: 3,
			want: Mode{MaxUnavailable: 3},
		},
		"a long max-unavailable: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "00000000000000000001"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
		"malformed max-unavailable: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "lots%"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
		"negative max-unavailable: 1, and said": {
			annotations: map[string]string{MaxUnavailableAnnotation: "-2"}, desired: 3,
			want: Mode{MaxUnavailable: 1}, problems: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m, problems := ParseMode(tc.annotations, tc.desired)
			g.Expect(m).To(Equal(tc.want))
			g.Expect(problems).To(HaveLen(tc.problems))
			for _, p := range problems {
				// The Warning Event names the annotation.
				g.Expect(p.Error()).To(HavePrefix("annotation reroll.dev/"))
			}
		})
	}
}
