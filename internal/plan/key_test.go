package plan

import (
	"strings"
	"testing"
)

// TestKey_PinnedValues pins the decision key, which notification state
// holds across restarts and versions (issue #36 builds its input on the
// stack): the first 32 hex characters of the SHA-256 of uid, NUL, the
// record before, NUL, the record after, computed outside Go with
// printf '%s\0%s\0%s' "$uid" "$before" "$after" | sha256sum | cut -c1-32.
func TestKey_PinnedValues(t *testing.T) {
	cases := map[string]struct {
		uid, before, after string // key's inputs
		want               string // sha256sum's answer
	}{
		"a change":                     {uid: "u-1", before: `{"ConfigMap/a":{"k":"1"}}`, after: `{"ConfigMap/a":{"k":"2"}}`, want: "c8c0788aa937702d9965e99a0d820568"},
		"longer than the stack buffer": {uid: "u-2", before: strings.Repeat("b", 600), want: "2f5aa6725e821283f61bb97c9a68bc76"},
		"all empty":                    {want: "96a296d224f285c67bee93c30f8a3091"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := key(c.uid, c.before, c.after); got != c.want {
				t.Errorf("key = %s, want %s", got, c.want)
			}
		})
	}
}
