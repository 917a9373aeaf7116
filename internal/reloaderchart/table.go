package reloaderchart

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// keysYAML is a copy of charts/reroll/files/reloader-keys.yaml.
//
//go:embed keys.yaml
var keysYAML []byte

// Verdict says what Reroll's chart does with a Reloader value.
type Verdict string

const (
	// Same: the chart renders the effect Reloader's chart renders.
	Same Verdict = "same"
	// Mapped: the chart renders the same effect through a Reroll value or
	// behaviour.
	Mapped Verdict = "mapped"
	// Refused: the chart fails on the value, naming the fix.
	Refused Verdict = "refused"
	// Unknown: the key is not one of Reloader's chart; Reroll's schema
	// rejects it unless it is one of Reroll's own values.
	Unknown Verdict = "unknown"
	// Reroll: the key is not one of Reloader's chart but one of Reroll's
	// own values (charts/reroll/README.md); the chart applies it.
	Reroll Verdict = "reroll"
	// Invalid: the chart's values.schema.json refuses the value (a typo, a
	// wrong type), so helm install fails before rendering anything.
	Invalid Verdict = "invalid"
)

// Row is one key of the table.
type Row struct {
	// Key is the dotted path of the value; the row covers the keys below.
	Key string `json:"key"`
	// Verdict is Same, Mapped or Refused.
	Verdict Verdict `json:"verdict"`
	// Accepted is the verdict of a value a Refused row does not refuse.
	Accepted Verdict `json:"accepted,omitempty"`
	// Effect is what Reroll's chart renders for the key.
	Effect string `json:"effect"`
	// Fix is the message of a refusal: what to write instead.
	Fix string `json:"fix,omitempty"`
	// Default, Allowed, Match and AllowedKeys are the refusal rule (see
	// the table's header); Default is nil when the row has none.
	Default     any      `json:"default,omitempty"`
	Allowed     []any    `json:"allowed,omitempty"`
	Match       string   `json:"match,omitempty"`
	AllowedKeys []string `json:"allowedKeys,omitempty"`
}

// Rows returns the table, in its order. It panics on a malformed table: the
// table is compiled in, and a test reads it.
func Rows() []Row {
	rows, err := parseRows(keysYAML)
	if err != nil {
		panic(fmt.Sprintf("reloaderchart: keys.yaml: %v", err))
	}
	return rows
}

// parseRows decodes a table.
func parseRows(b []byte) ([]Row, error) {
	var t struct {
		Keys []Row `json:"keys"`
	}
	err := yaml.Unmarshal(b, &t)
	return t.Keys, err
}

// Refuses reports whether the row refuses value v (as decoded from YAML),
// with the rule the chart's template "reroll.reloaderRefusals" applies.
func (r Row) Refuses(v any) bool {
	if r.Verdict != Refused || empty(v) {
		return false
	}
	if len(r.AllowedKeys) > 0 {
		m, _ := v.(map[string]any)
		for k, val := range m {
			if !empty(val) && !slices.Contains(r.AllowedKeys, k) {
				return true
			}
		}
		return false
	}
	if r.Default != nil && jsonEqual(v, r.Default) {
		return false
	}
	for _, a := range r.Allowed {
		if jsonEqual(v, a) {
			return false
		}
	}
	if r.Match != "" && !regexp.MustCompile(r.Match).MatchString(fmt.Sprint(v)) {
		return false
	}
	return true
}

// Finding is the verdict on one row's keys in a values file.
type Finding struct {
	// Key is the row's key, or an unknown key of the file.
	Key string `json:"key"`
	// Verdict is what the chart does with the value given.
	Verdict Verdict `json:"verdict"`
	// Detail is the effect, or the fix of a refusal.
	Detail string `json:"detail"`
}

// Check returns a finding for each row with a key in values (a values file
// as decoded from YAML), one for each key no row covers (Reroll when it is a
// value of Reroll's chart, else Unknown), and one Invalid finding for each
// key the chart's schema refuses (SchemaErrors), which replaces any other
// finding of that key; sorted by key. A key whose value is null counts as
// absent, as Helm reads it.
func Check(values map[string]any) []Finding {
	rows := Rows()
	byKey := map[string]Row{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	seen := map[string]Finding{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			if v == nil {
				continue
			}
			if r, ok := byKey[path]; ok {
				f := Finding{Key: path, Verdict: r.Verdict, Detail: r.Effect}
				if r.Verdict == Refused {
					if r.Refuses(v) {
						f.Detail = r.Fix
					} else {
						f.Verdict = r.Accepted
					}
				}
				seen[path] = f
				continue
			}
			if sub, ok := v.(map[string]any); ok && covers(rows, path) {
				walk(path, sub)
				continue
			}
			if InSchema(path) {
				seen[path] = Finding{Key: path, Verdict: Reroll, Detail: "a value of Reroll's chart, not of Reloader's: applied as charts/reroll/README.md says"}
				continue
			}
			seen[path] = Finding{Key: path, Verdict: Unknown, Detail: "not a value of Reloader's chart 2.2.x; Reroll's schema fails the install unless it is one of Reroll's own values (docs/install.md)"}
		}
	}
	walk("", values)
	for _, f := range SchemaErrors(values) {
		seen[f.Key] = f
	}
	out := make([]Finding, 0, len(seen))
	for _, f := range seen {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// covers reports whether some row's key lies below path.
func covers(rows []Row, path string) bool {
	for _, r := range rows {
		if strings.HasPrefix(r.Key, path+".") {
			return true
		}
	}
	return false
}

// Differs reports whether any finding would make Reroll behave differently
// from Reloader: a refused, unknown or invalid key.
func Differs(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool {
		return f.Verdict == Refused || f.Verdict == Unknown || f.Verdict == Invalid
	})
}

// Markdown renders the table for docs/migrating-from-reloader.md.
func Markdown() string { return markdown(Rows()) }

func markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| Reloader value | verdict | what Reroll's chart renders | fix, when refused |\n|---|---|---|---|\n")
	for _, r := range rows {
		verdict := string(r.Verdict)
		if r.Verdict == Refused {
			verdict = fmt.Sprintf("refused (else %s)", r.Accepted)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Key, verdict, cell(r.Effect), cell(r.Fix))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// empty is Helm's (sprig's) empty: nil, false, 0, "" and empty maps and
// lists.
func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Float64, reflect.Float32:
		return rv.Float() == 0
	case reflect.Int, reflect.Int64, reflect.Int32:
		return rv.Int() == 0
	}
	return false
}

// jsonEqual compares as the template does: by JSON encoding.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
