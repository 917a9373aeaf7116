package projection

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRestoreProjected(t *testing.T) {
	const ours = "reroll-projection/p"
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "test.reroll.dev/v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Time: &metav1.Time{Time: time.Unix(0, 0)}}
	}
	// old is a target as Projection p left it: spec.a and the label, owned
	// by p; spec.b owned by another manager.
	old := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.reroll.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "labels": map[string]any{ProjectedLabel: "true"}},
			"spec":     map[string]any{"a": "projected", "b": "theirs", "keep": "x"},
		}}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			entry(ours, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:reroll.dev/projected":{}}},"f:spec":{"f:a":{}}}`),
			entry("kubectl", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:b":{},"f:keep":{}}}`),
		})
		return u
	}
	cases := map[string]struct {
		old    func() *unstructured.Unstructured // the stored object
		spec   map[string]any                    // the written object's spec
		writer string                            // the request's field manager
		want   map[string]any                    // spec after the handler
		label  bool                              // the label is back
		owned  bool                              // ours owns spec.a in the result
	}{
		"replace without the field": {old: old, spec: map[string]any{"keep": "x"}, writer: "kubectl-replace",
			want: map[string]any{"keep": "x", "a": "projected"}, label: true, owned: true},
		"a different value is kept": {old: old, spec: map[string]any{"a": "mine"}, writer: "kubectl-replace",
			want: map[string]any{"a": "mine"}, label: true},
		"the Projection's own write": {old: old, spec: map[string]any{"keep": "x"}, writer: ours,
			want: map[string]any{"keep": "x"}},
		"another manager's field is not ours": {old: old, spec: map[string]any{"a": "projected"}, writer: "kubectl-replace",
			want: map[string]any{"a": "projected"}, label: true},
		"a write without the field manager option": {old: old, spec: map[string]any{}, writer: "",
			want: map[string]any{"a": "projected"}, label: true, owned: true},
		"another apiVersion's entry": {old: func() *unstructured.Unstructured {
			u := old()
			mf := u.GetManagedFields()
			mf[0].APIVersion = "test.reroll.dev/v2"
			u.SetManagedFields(mf)
			return u
		}, spec: map[string]any{}, writer: "kubectl-replace", want: map[string]any{}},
		"not a Projection's manager": {old: func() *unstructured.Unstructured {
			u := old()
			mf := u.GetManagedFields()
			mf[0].Manager = "reroll-projectionist"
			u.SetManagedFields(mf)
			return u
		}, spec: map[string]any{}, writer: "kubectl-replace", want: map[string]any{}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			o := c.old()
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "test.reroll.dev/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": c.spec,
			}}
			// The API server has already dropped the removed fields from
			// every manager's entry, and an entry left empty.
			obj.SetManagedFields(o.GetManagedFields()[1:])
			_, err := restoreProjected(o, obj, c.writer)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(obj.Object["spec"]).To(gomega.Equal(c.want))
			g.Expect(obj.GetLabels()[ProjectedLabel] == "true").To(gomega.Equal(c.label))
			_, _, lost := rewritten(obj, ours, []string{"spec.a"})
			g.Expect(!lost).To(gomega.Equal(c.owned))
		})
	}
}
