package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onsi/gomega"
)

func TestTruncateNote(t *testing.T) {
	cases := map[string]struct {
		// in is the note; wantLen its length after truncation.
		in      string
		wantLen int
	}{
		"a short note is kept":      {in: "Rolled after ConfigMap/a changed keys b", wantLen: 39},
		"a long note is cut":        {in: strings.Repeat("k,", 2000), wantLen: MaxEventNote},
		"a cut never splits a rune": {in: "a" + strings.Repeat("é", 1000), wantLen: MaxEventNote - 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got := truncateNote(tc.in)
			g.Expect(got).To(gomega.HaveLen(tc.wantLen))
			g.Expect(utf8.ValidString(got)).To(gomega.BeTrue())
		})
	}
}
