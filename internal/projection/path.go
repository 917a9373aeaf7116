package projection

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ParsePath splits a field path of spec.fields[].path into the names it
// traverses: names separated by dots, or ["..."] for a name that holds dots
// or slashes, e.g. `spec.template.metadata.annotations["example.com/at"]` is
// [spec template metadata annotations example.com/at]. It returns an error
// naming the position of the first malformed part.
func ParsePath(path string) ([]string, error) {
	var out []string
	for i := 0; i < len(path); {
		switch {
		case path[i] == '[':
			if !strings.HasPrefix(path[i:], `["`) {
				return nil, fmt.Errorf("path %q: want [\"name\"] at offset %d", path, i)
			}
			end := strings.Index(path[i+2:], `"]`)
			if end <= 0 {
				return nil, fmt.Errorf("path %q: unterminated or empty [\"name\"] at offset %d", path, i)
			}
			out = append(out, path[i+2:i+2+end])
			i += end + 4
			if i < len(path) && path[i] != '.' && path[i] != '[' {
				return nil, fmt.Errorf("path %q: want . or [ after [\"name\"] at offset %d", path, i)
			}
		case path[i] == '.' && len(out) > 0:
			i++
			fallthrough
		default:
			j := i
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("path %q: empty name at offset %d", path, i)
			}
			out = append(out, path[i:j])
			i = j
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("path %q is empty", path)
	}
	return out, nil
}

// valueAt returns the string at names in obj; false when it is absent or not
// a string.
func valueAt(obj map[string]any, names []string) (string, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, names...)
	if err != nil || !found {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// owners returns the field managers that own the field at names according
// to managedFields, in their order there, with the operation of each
// (Apply or Update).
func owners(managedFields []metav1.ManagedFieldsEntry, names []string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range managedFields {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			continue
		}
		if ownsPath(set, names) {
			out = append(out, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation})
		}
	}
	return out
}

// ownsPath reports whether a FieldsV1 set ({"f:spec":{"f:x":{}}}) holds the
// field at names.
func ownsPath(set map[string]any, names []string) bool {
	cur := set
	for _, n := range names {
		next, ok := cur["f:"+n].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	return true
}
