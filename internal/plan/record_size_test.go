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
	// many is 3,000 objects of one key: about 150 KB per object.
	many := Record{}
	for i := range 3000 {
		many[fmt.Sprintf("ConfigMap/%s-%04d", strings.Repeat("c", 30), i)] = map[string]string{"k": "0123456789abcdef"}
	}
	cases := map[string]struct {
		// cur and prev are the states given to bounded; room its room.
		cur, prev Record
		room      int
		// want is the level of the record and of both compared states.
		want, wantCmp recordLevel
	}{
		"a small record is kept per key": {cur: small, prev: small, room: maxAnnotationsBytes},
		"a record over the limit falls back": {
			cur: huge, room: maxAnnotationsBytes, want: perObjectLevel, wantCmp: perObjectLevel,
		},
		"a fallen-back previous record compares per object": {
			cur: small, prev: perObject(small), room: maxAnnotationsBytes, wantCmp: perObjectLevel,
		},
		// The security review: a 171 KB last-applied-configuration leaves
		// about 80 KB, less than one digest per object of 3,000 objects.
		"many objects beside a large annotation: one digest for all": {
			cur: many, room: 80 << 10, want: allObjectsLevel, wantCmp: allObjectsLevel,
		},
		"many objects with room: one digest per object": {
			cur: many, room: maxAnnotationsBytes, want: perObjectLevel, wantCmp: perObjectLevel,
		},
		"a previous record of one digest for all stays so": {
			cur: small, prev: allObjects(small), room: maxAnnotationsBytes, want: allObjectsLevel, wantCmp: allObjectsLevel,
		},
		"a small room for a small record": {
			cur: small, prev: small, room: 10, want: allObjectsLevel, wantCmp: allObjectsLevel,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			record, cur, prev, level, encoded := bounded(tc.cur, tc.prev, tc.room)
			g.Expect(level).To(gomega.Equal(tc.want))
			g.Expect(encoded).To(gomega.Equal(record.String()), "the encoding returned is the record's")
			g.Expect(record.level()).To(gomega.Equal(tc.want))
			if level != allObjectsLevel {
				g.Expect(len(record.String())).To(gomega.BeNumerically("<=", tc.room))
			}
			g.Expect(cur.level()).To(gomega.Equal(tc.wantCmp))
			if tc.prev != nil {
				g.Expect(prev.level()).To(gomega.Equal(tc.wantCmp))
			}
		})
	}
}

func TestAllObjects_ComparesLikeForLike(t *testing.T) {
	g := gomega.NewWithT(t)
	before := Record{"ConfigMap/a": {"k": "1111111111111111"}, "ConfigMap/b": {"k": "2222222222222222"}}
	after := Record{"ConfigMap/a": {"k": "1111111111111111"}, "ConfigMap/b": {"k": "3333333333333333"}}
	refs := []reference.Reference{{Kind: reference.ConfigMap, Name: "a", All: true}, {Kind: reference.ConfigMap, Name: "b", All: true}}
	g.Expect(allObjects(allObjects(before))).To(gomega.Equal(allObjects(before)), "idempotent")
	g.Expect(allObjects(before)).To(gomega.Equal(allObjects(perObject(before))), "from any level")
	g.Expect(allObjectsDiff(refs, allObjects(before), allObjects(before))).To(gomega.BeEmpty())
	changes := allObjectsDiff(refs, allObjects(before), allObjects(after))
	g.Expect(changes).To(gomega.HaveLen(1))
	g.Expect(changes[0].Ref.Name).To(gomega.Equal(allObjectsID))
	g.Expect(allObjectsDiff(refs, nil, allObjects(after))).To(gomega.BeEmpty(), "first sight")
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
