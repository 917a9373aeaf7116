package validate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/reroll/reroll/internal/schemaerror"
)

// maxSchemaBytes bounds a rule's schema before it is compiled.
const maxSchemaBytes = 64 << 10

// maxSchemaFindings bounds the findings one schema check reports.
const maxSchemaFindings = 10

// schemaURL names a rule's schema inside its own compiler; nothing is
// fetched from it.
const schemaURL = "https://reroll.dev/validator/schema.json"

// noLoader refuses every reference outside the schema: a tenant's schema
// must not make Reroll read a file or fetch a URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema: a rule's schema may only refer to itself", url)
}

// compileSchema compiles raw (JSON) as a draft 2020-12 schema (unless its
// $schema names another draft), with no loader.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), maxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// schemaErrors validates doc against s and returns one message per place
// in doc that fails, sorted, at most maxSchemaFindings. The messages say
// what the schema wants at which path, never the value there.
func schemaErrors(s *jsonschema.Schema, doc any) []string {
	err := s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"could not be checked against the schema"}
	}
	var out []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		at := "/" + strings.Join(e.InstanceLocation, "/")
		out = append(out, fmt.Sprintf("fails the schema at %s: %s", at, schemaerror.Describe(e.ErrorKind)))
	}
	leaves(ve)
	sort.Strings(out)
	out = slices.Compact(out)
	if len(out) > maxSchemaFindings {
		out = append(out[:maxSchemaFindings], fmt.Sprintf("fails the schema at %d more places", len(out)-maxSchemaFindings))
	}
	return out
}
