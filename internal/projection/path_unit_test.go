package projection

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParsePath(t *testing.T) {
	cases := map[string]struct {
		path string   // spec.fields[].path
		want []string // names; nil means an error
	}{
		"dotted":                 {path: "spec.storage.s3.accessKey", want: []string{"spec", "storage", "s3", "accessKey"}},
		"one name":               {path: "data", want: []string{"data"}},
		"bracketed annotation":   {path: `spec.template.metadata.annotations["example.com/at"]`, want: []string{"spec", "template", "metadata", "annotations", "example.com/at"}},
		"bracket then dot":       {path: `spec["a.b"].c`, want: []string{"spec", "a.b", "c"}},
		"two brackets":           {path: `spec["a"]["b"]`, want: []string{"spec", "a", "b"}},
		"empty":                  {path: ""},
		"leading dot":            {path: ".spec"},
		"double dot":             {path: "spec..x"},
		"trailing dot":           {path: "spec."},
		"unterminated bracket":   {path: `spec["a`},
		"empty bracket":          {path: `spec[""]`},
		"name glued to bracket":  {path: `spec["a"]b`},
		"bracket without quotes": {path: `spec[a]`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePath(c.path)
			if c.want == nil {
				if err == nil {
					t.Fatalf("ParsePath(%q) = %q, want an error", c.path, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("ParsePath(%q) = %q, %v; want %q", c.path, got, err, c.want)
			}
		})
	}
}

func TestOwners(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	mf := []metav1.ManagedFieldsEntry{
		entry("kubectl", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:a":{},"f:b":{}}}`),
		entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:a":{}},"f:metadata":{"f:annotations":{"f:example.com/x":{}}}}`),
	}
	cases := map[string]struct {
		names []string // the path
		want  []string // managers owning it, in order
	}{
		"shared":            {names: []string{"spec", "a"}, want: []string{"kubectl", FieldManager}},
		"other only":        {names: []string{"spec", "b"}, want: []string{"kubectl"}},
		"annotation":        {names: []string{"metadata", "annotations", "example.com/x"}, want: []string{FieldManager}},
		"nobody":            {names: []string{"spec", "c"}},
		"parent owned only": {names: []string{"spec"}, want: []string{"kubectl", FieldManager}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, o := range owners(mf, c.names) {
				got = append(got, o.Manager)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("owners(%q) = %q, want %q", c.names, got, c.want)
			}
		})
	}
}
