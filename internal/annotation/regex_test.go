package annotation

import (
	"runtime"
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

// The entries of the security review (issue #24): each compiles or matches
// at a cost no list annotation may impose.
var (
	// hugeRepeat is the 3,010-byte `(?:a…a){1000}` (3,000 a's): Go's
	// regexp.Compile of it allocates about 650 MiB.
	hugeRepeat = "(?:" + strings.Repeat("a", 3000) + "){1000}"
	// slowMatch takes about 5 ms to match one 245-character name.
	slowMatch = `(?:.?){999}#1`
	// bigClasses compiles to 4,309 instructions holding 1,338,000 rune
	// ranges, about 1 MiB held per cached entry.
	bigClasses = `(?:\pL{10}|\pN{10}|\pM{10}|\pS{10}){100}z0001`
)

func TestCompile_RefusesCostlyPatternsWithinBoundedHeap(t *testing.T) {
	// The bound: the refusal of the 3 KB expression, every other costly
	// entry and the acceptance of an entry at the limit together allocate
	// less than 4 MiB (the unbounded compile of hugeRepeat alone allocates
	// about 650 MiB).
	const heapBound = 4 << 20
	cases := map[string]struct {
		// entry is the list entry.
		entry string
		// wantErr is part of the refusal; "" accepts the entry.
		wantErr string
	}{
		"3 KB repeat of a literal": {entry: hugeRepeat, wantErr: "longer than the limit"},
		"the same repeat, short enough to parse": {
			entry: "(?:" + strings.Repeat("a", 500) + "){1000}", wantErr: "more than the limit of 1000",
		},
		"nested repeats":       {entry: "(?:(?:ab){30}){30}", wantErr: "more than the limit"},
		"slow to match":        {entry: slowMatch, wantErr: "more than the limit"},
		"large classes":        {entry: bigClasses, wantErr: "more than the limit"},
		"a name":               {entry: "app-config"},
		"a usual pattern":      {entry: "app-.*"},
		"a counted class":      {entry: "[a-z0-9]{1,63}"},
		"one unicode class":    {entry: `\pL+`},
		"not a regexp":         {entry: "(", wantErr: "missing closing )"},
		"just under the limit": {entry: "(?:" + strings.Repeat("a", 330) + "){3}"},
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			re, _, err := compile(tc.entry)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(gomega.HaveOccurred())
				g.Expect(re).NotTo(gomega.BeNil())
				return
			}
			g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.wantErr)))
			g.Expect(re).To(gomega.BeNil())
		})
	}
	runtime.ReadMemStats(&after)
	gomega.NewWithT(t).Expect(after.TotalAlloc - before.TotalAlloc).To(gomega.BeNumerically("<", heapBound))
}

func TestParse_RefusedEntryLeavesTheRestOfTheList(t *testing.T) {
	g := gomega.NewWithT(t)
	key := DefaultNames().ConfigMapReload
	o, errs := DefaultConfig().Parse(map[string]string{key: "app-.*," + slowMatch + ",db"}, nil)
	g.Expect(errs).To(gomega.HaveLen(1))
	// The error names the annotation and the entry, for the Warning Event.
	g.Expect(errs[0].Error()).To(gomega.ContainSubstring(key))
	g.Expect(errs[0].Error()).To(gomega.ContainSubstring(slowMatch))
	g.Expect(o.ConfigMaps.Matches("app-x")).To(gomega.BeTrue())
	g.Expect(o.ConfigMaps.Matches("db")).To(gomega.BeTrue())
	g.Expect(o.ConfigMaps.Matches("other")).To(gomega.BeFalse())
}

func TestParse_MatchingStopsAtTheBudget(t *testing.T) {
	g := gomega.NewWithT(t)
	key := DefaultNames().ConfigMapReload
	// 64 entries at the cost limit (about 330 instructions each, never
	// matching), against 300 names of 245 characters: about 1.6e9 units,
	// far over MaxMatchCost.
	entries := make([]string, MaxListEntries)
	for i := range entries {
		entries[i] = "(?:.?){80}#" + strings.Repeat("b", i%10)
	}
	pattern := strings.Join(entries, ",")
	g.Expect(len(pattern)).To(gomega.BeNumerically("<=", MaxListLength))
	o, errs := DefaultConfig().Parse(map[string]string{key: pattern}, nil)
	g.Expect(errs).To(gomega.BeEmpty())
	// Positive control: the budget is whole before matching.
	g.Expect(o.MatchBudgetExceeded()).To(gomega.BeEmpty())
	name := strings.Repeat("n", 245)
	for range 300 {
		g.Expect(o.ConfigMaps.Matches(name)).To(gomega.BeFalse())
	}
	g.Expect(o.MatchBudgetExceeded()).To(gomega.Equal(key))
	// A copy of the OptIn shares the spent budget.
	cp := o
	g.Expect(cp.MatchBudgetExceeded()).To(gomega.Equal(key))
	// A new Parse starts a new budget.
	again, _ := DefaultConfig().Parse(map[string]string{key: pattern}, nil)
	g.Expect(again.MatchBudgetExceeded()).To(gomega.BeEmpty())
}
