package reloaderchart

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/reroll/reroll/internal/schemaerror"
)

// schemaJSON is a copy of charts/reroll/values.schema.json, the schema Helm
// validates a values file against before it renders anything.
//
//go:embed schema.json
var schemaJSON []byte

// schemaURL names the schema in its compiler; it is never fetched.
const schemaURL = "https://reroll.dev/charts/reroll/values.schema.json"

// compiled is the chart's schema, compiled once.
var compiled = func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, schemaDoc); err != nil {
		panic(fmt.Sprintf("reloaderchart: schema.json: %v", err))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		panic(fmt.Sprintf("reloaderchart: schema.json: %v", err))
	}
	return s
}()

// SchemaErrors validates values (a values file as decoded from YAML) against
// the chart's values.schema.json, as `helm install` does, and returns one
// Finding with Verdict Invalid per dotted key path that the schema refuses
// (an unknown key, a wrong type, a value out of range), sorted by key. Keys
// whose value is null are dropped first: Helm deletes them before it
// validates. An empty result means Helm would accept the file.
func SchemaErrors(values map[string]any) []Finding {
	err := compiled.Validate(toJSON(withoutNulls(values)))
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if err != nil {
			// The schema itself failed (compiled in and tested): say so on
			// the file as a whole rather than accept it.
			return []Finding{{Key: "(file)", Verdict: Invalid, Detail: err.Error()}}
		}
		return nil
	}
	byKey := map[string][]string{}
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		path := strings.Join(e.InstanceLocation, ".")
		if extra, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			// The schema reports an unknown key on its parent; name the key.
			for _, p := range extra.Properties {
				key := p
				if path != "" {
					key = path + "." + p
				}
				byKey[key] = append(byKey[key], "not a value of Reroll's chart (a typo, or a value of another chart)")
			}
			return
		}
		if path == "" {
			path = "(file)"
		}
		byKey[path] = append(byKey[path], schemaerror.Describe(e.ErrorKind))
	}
	leaves(ve)
	out := make([]Finding, 0, len(byKey))
	for key, msgs := range byKey {
		sort.Strings(msgs)
		out = append(out, Finding{Key: key, Verdict: Invalid, Detail: "helm install fails: " + strings.Join(slices.Compact(msgs), "; ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// schemaDoc is schemaJSON decoded, for InSchema.
var schemaDoc = func() map[string]any {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic(fmt.Sprintf("reloaderchart: schema.json: %v", err))
	}
	m, _ := doc.(map[string]any)
	return m
}()

// InSchema reports whether the dotted path names a property of the chart's
// schema, or lies under an object of it that takes any property: a value of
// Reroll's chart.
func InSchema(path string) bool {
	node := schemaDoc
	for _, seg := range strings.Split(path, ".") {
		node = deref(schemaDoc, node)
		props, _ := node["properties"].(map[string]any)
		next, ok := props[seg].(map[string]any)
		if !ok {
			extra, set := node["additionalProperties"]
			return !set || extra != false
		}
		node = next
	}
	return true
}

// deref follows a local "$ref" (#/definitions/x) of node within root.
func deref(root, node map[string]any) map[string]any {
	ref, ok := node["$ref"].(string)
	if !ok || !strings.HasPrefix(ref, "#/") {
		return node
	}
	cur := any(root)
	for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[seg]
	}
	if m, ok := cur.(map[string]any); ok {
		return m
	}
	return node
}

// withoutNulls returns v without the map entries whose value is null, at
// every depth, as Helm drops them before validating.
func withoutNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if val != nil {
				out[k] = withoutNulls(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = withoutNulls(val)
		}
		return out
	}
	return v
}

// toJSON converts a value decoded by sigs.k8s.io/yaml (float64 numbers) to
// what the validator expects: it re-reads the JSON encoding, so integers
// keep their type for "type": "integer".
func toJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return v
	}
	return doc
}
