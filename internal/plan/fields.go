package plan

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownsSpecOrAnnotations reports whether a managedFields entry owns a field
// of the spec or a metadata annotation not written by Kubernetes'
// controllers: its fieldsV1 object has a member "f:spec", or an
// "f:metadata" object whose "f:annotations" object has a member
// "f:<key>" whose key's domain (before any "/") is neither kubernetes.io
// nor a subdomain of it. A later member of the same name replaces an
// earlier one, as in encoding/json's decoding into a map.
//
// The answer is the one of decoding the fieldsV1 level by level into
// map[string]json.RawMessage with encoding/json (invalid JSON, or a level
// that is neither an object nor null, owns nothing), which this function
// did until it ran on every watch event of every workload (the cache's
// transform): decoding copied every member of the spec (several KB on a
// Deployment) into a RawMessage. It now checks the JSON with json.Valid
// and walks the members without copying; the fuzz test
// FuzzOwnsSpecOrAnnotations compares both on any input.
func ownsSpecOrAnnotations(f *metav1.FieldsV1) bool {
	if f == nil || !json.Valid(f.Raw) {
		return false
	}
	meta, ok := member(f.Raw, "f:spec", "f:metadata")
	if ok {
		return true
	}
	if meta == nil {
		return false
	}
	annotations, _ := member(meta, "", "f:annotations")
	if annotations == nil {
		return false
	}
	owns := false
	members(annotations, func(k []byte, _ []byte) bool {
		key, ok := bytes.CutPrefix(k, []byte("f:"))
		if !ok {
			return true
		}
		domain, _, _ := bytes.Cut(key, []byte("/"))
		owns = string(domain) != "kubernetes.io" && !bytes.HasSuffix(domain, []byte(".kubernetes.io"))
		return !owns
	})
	return owns
}

// member returns the value of the last member named last of the object v
// (valid JSON), nil when there is none or v is not an object, and whether
// v is an object with a member named first (first "" matches none); it
// stops at the first member named first.
func member(v []byte, first, last string) (value []byte, found bool) {
	members(v, func(k []byte, val []byte) bool {
		switch {
		case first != "" && string(k) == first:
			found = true
			return false
		case string(k) == last:
			value = val
		}
		return true
	})
	return value, found
}

// members calls f with the name (unquoted as encoding/json does) and the
// value of each member of v, valid JSON, in order, until f returns false;
// it calls f for none when v is not an object.
func members(v []byte, f func(name, value []byte) bool) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return
	}
	i = skipSpace(v, i+1)
	for i < len(v) && v[i] == '"' {
		end := skipValue(v, i)
		name := v[i:end]
		k := name[1 : len(name)-1]
		if !plainString(name) {
			var s string
			if json.Unmarshal(name, &s) != nil {
				return // valid JSON: not reached
			}
			k = []byte(s)
		}
		i = skipSpace(v, end)
		i = skipSpace(v, i+1) // ':'
		end = skipValue(v, i)
		if !f(k, v[i:end]) {
			return
		}
		i = skipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
}

// plainString reports whether the quoted JSON string s holds no escape and
// only ASCII, so that its content is its value as encoding/json decodes it
// (which replaces invalid UTF-8).
func plainString(s []byte) bool {
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at v[i], in v
// valid JSON.
func skipValue(v []byte, i int) int {
	depth := 0
	for ; i < len(v); i++ {
		switch v[i] {
		case '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing value
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
