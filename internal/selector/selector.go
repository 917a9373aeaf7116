package selector

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// legacyEntry is one comma-separated entry of a selector in Reloader's
// legacy forms "key:value" and "key:*" / "key=*".
var legacyEntry = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_./]*)(?::|=)(\*|[-A-Za-z0-9_.]*)$`)

// Parse parses a label selector flag the way Reloader reads it:
// surrounding double or single quotes are dropped, from the whole value and
// from each comma-separated entry (Reloader's chart renders
// --namespace-selector="env=test", and pflag's CSV reading of Reloader's
// string slices drops them); "key:value" means key=value and "key:*" or
// "key=*" means the key exists, as Reloader's legacy forms do. The error
// names the flag.
func Parse(flag, value string) (labels.Selector, error) {
	entries := strings.Split(Unquote(value), ",")
	for i, e := range entries {
		e = Unquote(e)
		if m := legacyEntry.FindStringSubmatch(e); m != nil && !strings.Contains(e, "==") {
			switch {
			case m[2] == "*":
				e = m[1]
			case strings.Contains(e, ":") && !strings.Contains(e, "="):
				e = m[1] + "=" + m[2]
			}
		}
		entries[i] = e
	}
	sel, err := labels.Parse(strings.Join(entries, ","))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return sel, nil
}

// Unquote trims spaces and one pair of matching surrounding quotes that
// enclose no other quote of their kind.
func Unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] && !strings.ContainsRune(s[1:len(s)-1], rune(s[0])) {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}
