package projection

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzRestoreProjected feeds the handler's decode and restore path any
// oldObject and object: it must never panic, every value it puts in the
// object must be oldObject's at the same path, and a second pass must
// restore nothing (the answer is stable).
func FuzzRestoreProjected(f *testing.F) {
	old := `{"apiVersion":"test.reroll.dev/v1","kind":"Widget","metadata":{"name":"w","labels":{"reroll.dev/projected":"true"},` +
		`"managedFields":[{"manager":"reroll-projection/p","operation":"Apply","apiVersion":"test.reroll.dev/v1","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:metadata":{"f:labels":{"f:reroll.dev/projected":{}}},"f:spec":{"f:a":{},"f:b":{"f:c":{}}}}}]},"spec":{"a":"x","b":{"c":1}}}`
	f.Add(old, `{"apiVersion":"test.reroll.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}`, "kubectl-replace")
	f.Add(old, `{"apiVersion":"test.reroll.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"b":"scalar"}}`, "")
	f.Add(old, `{"apiVersion":"test.reroll.dev/v1","kind":"Widget","metadata":{"name":"w","managedFields":[{"manager":"reroll-projection/p","operation":"Apply","apiVersion":"test.reroll.dev/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:z":{}}}}]}}`, "x")
	f.Add(old, `{}`, "reroll-projection/p")
	f.Add(`{"metadata":{"managedFields":[{"manager":"reroll-projection/p","operation":"Apply","fieldsV1":{"k:{\"a\":1}":{}}}]}}`, `{}`, "")
	f.Fuzz(func(t *testing.T, oldJSON, objJSON, writer string) {
		o, obj := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		if o.UnmarshalJSON([]byte(oldJSON)) != nil || obj.UnmarshalJSON([]byte(objJSON)) != nil {
			return
		}
		before := obj.DeepCopy()
		restored, err := restoreProjected(o, obj, writer)
		if err != nil {
			return
		}
		if _, err := json.Marshal(obj.Object); err != nil {
			t.Fatalf("the restored object does not encode: %v", err)
		}
		for _, leaf := range leaves(obj.Object, nil) {
			if v, ok, _ := unstructured.NestedFieldNoCopy(before.Object, leaf...); ok && equalJSON(v, valueOf(obj.Object, leaf)) {
				continue
			}
			if leaf[0] == "metadata" && len(leaf) > 1 && leaf[1] == "managedFields" {
				continue
			}
			if v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, leaf...); !ok || !equalJSON(v, valueOf(obj.Object, leaf)) {
				t.Fatalf("%v holds a value oldObject does not hold there (restored %v)", leaf, restored)
			}
		}
		again, err := restoreProjected(o, obj, writer)
		if err != nil || len(again) > 0 {
			t.Fatalf("a second pass restored %v (error %v)", again, err)
		}
	})
}

// leaves returns the paths of every non-map value in m.
func leaves(m map[string]any, prefix []string) [][]string {
	var out [][]string
	for k, v := range m {
		p := append(append([]string(nil), prefix...), k)
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leaves(sub, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func valueOf(m map[string]any, path []string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
