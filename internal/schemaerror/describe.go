// Package schemaerror says what a JSON Schema wants where a value fails
// it, without the value: the messages of github.com/santhosh-tekuri/jsonschema
// quote the value for a pattern, a format, an enum or a bound, and the
// values Reroll checks may be Secrets' (a Validator's rule on a Secret; a
// Helm release's values read by `kubectl reroll migrate-check
// --from-cluster`). internal/validate and internal/reloaderchart describe
// their schema failures with it.
package schemaerror

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var english = message.NewPrinter(language.English)

// Describe says what the schema wants at the failing place, never the
// value found there: e.g. "is more than 10", "does not match the pattern
// ^[a-z]+$". Kinds that name only types, lengths, counts, indexes and keys
// keep the library's message; a kind this function does not know (a later
// version's) is described by its keyword alone.
func Describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return "does not match the pattern " + k.Want
	case *kind.Format:
		return "is not a valid " + k.Want
	case *kind.Const:
		return "is not the one value the schema allows"
	case *kind.Enum:
		return "is not one of the values the schema allows"
	case *kind.Minimum:
		return "is less than " + k.Want.RatString()
	case *kind.Maximum:
		return "is more than " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return "must be more than " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return "must be less than " + k.Want.RatString()
	case *kind.MultipleOf:
		return "is not a multiple of " + k.Want.RatString()
	case *kind.InvalidJsonValue:
		return "is not a JSON value"
	case *kind.ContentMediaType:
		return "is not " + k.Want
	case *kind.ContentEncoding, *kind.ContentSchema:
		return "has content of the wrong encoding or schema"
	case *kind.Type, *kind.Required, *kind.AdditionalProperties, *kind.MinLength, *kind.MaxLength,
		*kind.MinItems, *kind.MaxItems, *kind.MinProperties, *kind.MaxProperties, *kind.UniqueItems,
		*kind.Dependency, *kind.DependentRequired, *kind.FalseSchema, *kind.MinContains, *kind.MaxContains,
		*kind.Schema, *kind.Group, *kind.Not, *kind.AllOf, *kind.AnyOf, *kind.OneOf, *kind.Reference,
		*kind.PropertyNames:
		// These name types, lengths, counts, indexes, keys and keywords:
		// never a value.
		return k.LocalizedString(english)
	}
	return "fails the keyword " + strings.Join(k.KeywordPath(), "/")
}
