package cli

import (
	"strings"

	"github.com/reroll/reroll/internal/change"
)

// changeObject is Reroll's one model of the change to one object, whose
// text form the Events carry and parseSummary reads back.
type changeObject = change.Object

// summary joins changes' text forms with "; ", as Events do.
func summary(cs []changeObject) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

// parseSummary reads the changes back from an Event's note: the part
// before the first ": " after "Rolled after ", "Notified URL after " or at
// the start of a NotRolled note, split on "; ". Parts that are not in the
// text form are skipped.
func parseSummary(note string) []changeObject {
	if _, rest, ok := strings.Cut(note, " after "); ok && (strings.HasPrefix(note, "Rolled after ") || strings.HasPrefix(note, "Notified ") || strings.HasPrefix(note, "Could not ")) {
		note = rest
	}
	var out []changeObject
	for _, part := range strings.Split(note, "; ") {
		// A Rolled note may end with ": <action>"; a NotRolled note's last
		// part is the reason.
		if i := strings.Index(part, ": "); i >= 0 {
			part = part[:i]
		}
		c, ok := parseChange(part)
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// parseChange parses one change's text form.
func parseChange(s string) (changeObject, bool) {
	id, what, ok := strings.Cut(s, " ")
	if !ok {
		return changeObject{}, false
	}
	parts := strings.Split(id, "/")
	var c changeObject
	switch len(parts) {
	case 2:
		c.Kind, c.Name = parts[0], parts[1]
	case 3:
		c.Kind, c.Namespace, c.Name = parts[0], parts[1], parts[2]
	default:
		return c, false
	}
	if c.Kind != "ConfigMap" && c.Kind != "Secret" {
		return c, false
	}
	switch {
	case what == "was created":
		c.Created = true
	case what == "was deleted":
		c.Deleted = true
	case what == "was written":
		c.Written = true
	case strings.HasPrefix(what, "changed keys "):
		c.Keys = strings.Split(strings.TrimPrefix(what, "changed keys "), ",")
	default:
		return c, false
	}
	return c, true
}
