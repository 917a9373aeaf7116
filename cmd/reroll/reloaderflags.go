package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
)

// reloaderOnlyFlags are flags that some release of Stakater Reloader accepts
// and Reroll does not implement: the `*-auto-by-annotation` names of early
// releases.
// Reroll accepts them, so that a Reloader Deployment's arguments still start
// it, and logs a warning naming each one given (see unimplemented).
var reloaderOnlyFlags = []string{
	"configmap-auto-by-annotation",
	"secret-auto-by-annotation",
}

// addReloaderOnlyFlags binds each of reloaderOnlyFlags to a string in into.
func addReloaderOnlyFlags(fs *pflag.FlagSet, into map[string]*string) {
	for _, name := range reloaderOnlyFlags {
		v := new(string)
		into[name] = v
		fs.StringVar(v, name, "", "Reloader flag that Reroll does not implement: accepted, so that Reloader's arguments start Reroll, and ignored with a warning naming it.")
	}
}

// unimplemented returns the names of the reloaderOnlyFlags given on the
// command line, sorted.
func unimplemented(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(reloaderOnlyFlags, f.Name) {
			out = append(out, "--"+f.Name)
		}
	})
	slices.Sort(out)
	return out
}

// legacyEntry is one comma-separated entry of a selector in Reloader's
// legacy forms "key:value" and "key:*" / "key=*".
var legacyEntry = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_./]*)(?::|=)(\*|[-A-Za-z0-9_.]*)$`)

// parseSelector parses a label selector flag the way Reloader reads it:
// surrounding double or single quotes are dropped, from the whole value and
// from each comma-separated entry (Reloader's chart renders
// --namespace-selector="env=test", and pflag's CSV reading of Reloader's
// string slices drops them); "key:value" means key=value and "key:*" or
// "key=*" means the key exists, as Reloader's legacy forms do. The error
// names the flag.
func parseSelector(flag, value string) (labels.Selector, error) {
	entries := strings.Split(unquote(value), ",")
	for i, e := range entries {
		e = unquote(e)
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

// unquote trims spaces and one pair of matching surrounding quotes that
// enclose no other quote of their kind.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] && !strings.ContainsRune(s[1:len(s)-1], rune(s[0])) {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}
