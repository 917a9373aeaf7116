package revert

import "testing"

// FuzzParsePatch feeds the template-patch and reverted annotations, which a
// tenant can write, to their parsers: they never panic, and "" is no
// record.
func FuzzParsePatch(f *testing.F) {
	for _, seed := range []string{"", "{}", "{", "null", `{"before":"a","after":"b"}`, `[1,2]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := ParsePatch(v)
		if v == "" && (p != nil || err != nil) {
			t.Fatalf("empty value: %v, %v", p, err)
		}
		if r := ParseReverted(v); (r == nil) != (v == "") {
			t.Fatalf("ParseReverted(%q) = %v", v, r)
		}
	})
}
