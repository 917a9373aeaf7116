package plan

import "testing"

// FuzzParseRecord checks the record parser: it never panics, and a record
// it accepts encodes to a value it reads back equal.
func FuzzParseRecord(f *testing.F) {
	f.Add(`{"ConfigMap/cfg":{"a":"0123456789abcdef"},"Secret/gone":null}`)
	f.Add(`{"ConfigMap/cfg":{"a":""}}`)
	f.Add(`null`)
	f.Add(`{"`)
	f.Fuzz(func(t *testing.T, v string) {
		o, err := ParseRecord(v)
		if err != nil || o == nil {
			// Invalid, or "": nothing recorded.
			return
		}
		again, err := ParseRecord(o.String())
		if err != nil {
			t.Fatalf("re-reading %q: %v", o.String(), err)
		}
		if again.String() != o.String() {
			t.Fatalf("round trip changed %q to %q", o.String(), again.String())
		}
	})
}
