package projection

import (
	"encoding/base64"
	"testing"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// FuzzProjectionFields feeds a Projection's fields, as its author writes
// them, through what the reconcile does with them: parse the paths, check
// the templates, render the values. It must never panic; a source field
// renders the source's value (as text, or base64), a digest field a
// digestLength-character digest.
func FuzzProjectionFields(f *testing.F) {
	const digestPath = "status.digest"
	f.Add("spec.password", "data.url", "postgres://${user}:${password}@db", "password", []byte("s3cret"), false, "user")
	f.Add("spec.a", "spec.a.b", "${", "x", []byte{0xff, 0xfe}, true, "x")
	f.Add(`metadata.annotations["a.b/c"]`, "spec.tls", "${a}${b}${a}", "a", []byte(""), false, "b")
	f.Add("", "..", "$${x}", "", []byte("v"), false, "")
	f.Fuzz(func(t *testing.T, sourcePath, templatePath, template, source string, value []byte, b64 bool, other string) {
		enc := rerollv1alpha1.Encoding("")
		if b64 {
			enc = rerollv1alpha1.EncodingBase64
		}
		spec := rerollv1alpha1.ProjectionSpec{
			Sources: []rerollv1alpha1.Source{{Name: source}, {Name: other}},
			Fields: []rerollv1alpha1.Field{
				{Path: sourcePath, Source: source, Encoding: enc},
				{Path: templatePath, Template: &template},
				{Path: digestPath, DigestOf: []string{source, other}},
			},
		}
		parsed, err := paths(spec.Fields)
		if err != nil {
			return
		}
		for _, fl := range spec.Fields {
			if len(parsed[fl.Path]) == 0 {
				t.Fatalf("path %q accepted with no names", fl.Path)
			}
		}
		if err := checkTemplates(spec); err != nil {
			return
		}
		values := map[string]sourceValue{source: {value: value, present: true}, other: {value: []byte("o"), present: true}}
		out, err := desired(spec.Fields, values, []byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			return
		}
		if v, ok := out[sourcePath]; ok && sourcePath != templatePath && sourcePath != digestPath && source != other {
			want := string(value)
			if b64 {
				want = base64.StdEncoding.EncodeToString(value)
			}
			if v != want {
				t.Fatalf("source field rendered %q, want %q", v, want)
			}
		}
		if d, ok := out[digestPath]; ok && templatePath != digestPath && len(d) != digestLength {
			t.Fatalf("digest %q has %d characters, want %d", d, len(d), digestLength)
		}
	})
}
