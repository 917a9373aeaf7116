package compact

import (
	"reflect"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// built returns s as a new string of its own, as a decoder makes one.
func built(s string) string { return string([]byte(s)) }

func TestPack_KeepsEveryValue(t *testing.T) {
	full := meta("web")
	full.GenerateName, full.SelfLink, full.Finalizers = "web-", "/apis/apps/v1/x", []string{"a/b", "c"}
	full.ManagedFields = append(full.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}, Subresource: "status"})
	cases := map[string]metav1.ObjectMeta{
		"every field":       full,
		"nothing":           {},
		"empty maps":        {Name: "x", Labels: map[string]string{}, Annotations: map[string]string{}, Finalizers: []string{}},
		"annotations only":  {Name: "y", Annotations: map[string]string{"k": "v", "k2": ""}},
		"empty owner's UID": {Name: "z", OwnerReferences: []metav1.OwnerReference{{Name: "o"}}},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			got := *m.DeepCopy()
			pack(&got)
			if !reflect.DeepEqual(got, m) {
				t.Errorf("packed\n%+v\nwant\n%+v", got, m)
			}
		})
	}
}

func TestPack_OneAllocationForOwnStrings(t *testing.T) {
	name, uid := built("web"), built("0b7d3f8e-uid")
	m := metav1.ObjectMeta{Name: name, UID: types.UID(uid), Namespace: built("ns"), ResourceVersion: built("42"),
		Annotations:   map[string]string{"k": built("v1")},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", APIVersion: built("full rest")}}}
	pack(&m)
	rv, held, value := unsafe.StringData(m.ResourceVersion), unsafe.StringData(m.ManagedFields[0].APIVersion), unsafe.StringData(m.Annotations["k"])
	if held != (*byte)(unsafe.Add(unsafe.Pointer(rv), len(m.ResourceVersion))) || value != (*byte)(unsafe.Add(unsafe.Pointer(held), len("full rest"))) {
		t.Errorf("resourceVersion %p, managedFields apiVersion %p and annotation value %p are not one allocation", rv, held, value)
	}
	// The name and UID, which maps keep as keys, stay their own strings.
	if unsafe.StringData(m.Name) != unsafe.StringData(name) || unsafe.StringData(string(m.UID)) != unsafe.StringData(uid) {
		t.Error("the name or UID was copied")
	}
}

func TestPack_SharesRepeatedStringsAndMaps(t *testing.T) {
	deployment := func(name string, annotations map[string]string) *Workload {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: built("team-a"), Name: name, Annotations: annotations}}
		w, ok := From(d)
		if !ok {
			t.Fatal("not compacted")
		}
		return w.(*Workload)
	}
	mapOf := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	a := deployment("a", map[string]string{built("reroll.dev/auto"): built("true")})
	b := deployment("b", map[string]string{built("reroll.dev/auto"): built("true")})
	c := deployment("c", map[string]string{built("reroll.dev/auto"): built("false")})
	if mapOf(a.Annotations) != mapOf(b.Annotations) {
		t.Error("equal annotations are two maps")
	}
	if mapOf(a.Annotations) == mapOf(c.Annotations) || c.Annotations["reroll.dev/auto"] != "false" {
		t.Errorf("other annotations %v share a map", c.Annotations)
	}
	if unsafe.StringData(a.Namespace) != unsafe.StringData(c.Namespace) {
		t.Error("the namespace is a string per workload")
	}
	for k := range c.Annotations {
		for k2 := range a.Annotations {
			if unsafe.StringData(k) != unsafe.StringData(k2) {
				t.Error("an annotation key is a string per workload")
			}
		}
	}
}

// BenchmarkFrom compacts a trimmed Deployment whose metadata is as the
// decoder leaves it (every string its own), as the cache's transform does.
func BenchmarkFrom(b *testing.B) {
	m := meta("web")
	d := &appsv1.Deployment{ObjectMeta: m, Spec: appsv1.DeploymentSpec{Template: template}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		o := d.DeepCopy()
		o.Name, o.Namespace, o.UID = built(o.Name), built(o.Namespace), "uid-"+o.UID
		b.StartTimer()
		if _, ok := From(o); !ok {
			b.Fatal("not compacted")
		}
	}
}
