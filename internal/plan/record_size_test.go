package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/reference"
)

func TestBounded(t *testing.T) {
	small := Record{"ConfigMap/a": {"k": "0123456789abcdef"}, "Secret/gone": nil}
	huge := Record{"ConfigMap/big": {}}
	for i := range 400 {
		huge["ConfigMap/big"][fmt.Sprintf("%s-%d", strings.Repeat("k", 200), i)] = "0123456789abcdef"
	}
	cases := map[string]struct {
		// cur and prev are the states given to bounded.
		cur, prev Record
		// wantPerObject says whether the record and both compared states
		// hold one digest per object.
		wantPerObject bool
		// wantTooLarge is bounded's tooLarge.
		wantTooLarge bool
	}{
		"a small record is kept per key": {cur: small, prev: small},
		"a record over the limit falls back": {
			cur: huge, prev: nil, wantPerObject: true, wantTooLarge: true,
		},
		"a fallen-back previous record compares per object": {
			cur: small, prev: perObject(small), wantPerObject: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			record, cur, prev, tooLarge := bounded(tc.cur, tc.prev)
			g.Expect(tooLarge).To(gomega.Equal(tc.wantTooLarge))
			g.Expect(len(record.String())).To(gomega.BeNumerically("<=", maxRecordBytes))
			g.Expect(cur.perObject()).To(gomega.Equal(tc.wantPerObject))
			if tc.prev != nil {
				g.Expect(prev.perObject()).To(gomega.Equal(tc.wantPerObject))
			}
		})
	}
}

func TestPerObject_ComparesLikeForLike(t *testing.T) {
	g := gomega.NewWithT(t)
	before := Record{"Secret/db": {"password": "1111111111111111", "user": "2222222222222222"}, "Secret/gone": nil}
	after := Record{"Secret/db": {"password": "3333333333333333", "user": "2222222222222222"}, "Secret/gone": nil}
	g.Expect(perObject(perObject(before))).To(gomega.Equal(perObject(before)), "idempotent")
	refs := []reference.Reference{{Kind: reference.Secret, Name: "db", Keys: []string{"password"}}, {Kind: reference.Secret, Name: "gone", All: true}}
	changes := diff(refs, perObject(before), perObject(after))
	g.Expect(changes).To(gomega.HaveLen(1))
	g.Expect(changes[0].Keys).To(gomega.Equal([]string{objectDigestKey}))
	g.Expect(diff(refs, perObject(before), perObject(before))).To(gomega.BeEmpty())
}
