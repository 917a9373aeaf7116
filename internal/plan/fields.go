package plan

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownsSpecOrAnnotations reports whether a managedFields entry owns a field
// of the spec or a metadata annotation not written by Kubernetes'
// controllers: its fieldsV1 object has a member "f:spec", or an
// "f:metadata" object whose "f:annotations" object has a member
// "f:<key>" whose key's domain (before any "/") is neither kubernetes.io
// nor a subdomain of it. Invalid JSON, or a level that is neither an
// object nor null, owns nothing.
//
// It decodes each level with encoding/json. WrittenAt calls it only for
// the entries that could move its answer (a later time than the one found
// so far), so the creator's entry, the largest, is not decoded on each
// watch event (issue #36).
func ownsSpecOrAnnotations(f *metav1.FieldsV1) bool {
	if f == nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(f.Raw, &top) != nil {
		return false
	}
	if _, ok := top["f:spec"]; ok {
		return true
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(top["f:metadata"], &meta) != nil {
		return false
	}
	var annotations map[string]json.RawMessage
	if json.Unmarshal(meta["f:annotations"], &annotations) != nil {
		return false
	}
	for k := range annotations {
		key, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		domain, _, _ := strings.Cut(key, "/")
		if domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io") {
			return true
		}
	}
	return false
}
