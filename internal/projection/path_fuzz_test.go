package projection

import (
	"strings"
	"testing"
)

// FuzzParsePath feeds a Projection's field path, which its author writes, to
// ParsePath: it never panics, and every name it returns is non-empty and
// appears in the path.
func FuzzParsePath(f *testing.F) {
	for _, seed := range []string{"spec.replicas", `metadata.annotations["example.com/at"]`, `a[""]`, `a["b`, ".a", "a..b", `["x"]["y"]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		names, err := ParsePath(path)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" || !strings.Contains(path, n) {
				t.Fatalf("ParsePath(%q) = %q", path, names)
			}
		}
	})
}
