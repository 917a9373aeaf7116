package compact

import (
	"slices"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// counted returns an index function giving want (a new slice each call,
// its strings built anew, as index functions make them) and the number of
// its calls so far.
func counted(want []string) (func(client.Object) []string, *int) {
	n := 0
	return func(client.Object) []string {
		n++
		if want == nil {
			return nil
		}
		out := make([]string, len(want))
		for i, v := range want {
			out[i] = built(v)
		}
		return out
	}, &n
}

func TestIndexed_ComputesOncePerWorkload(t *testing.T) {
	want := []string{"ConfigMap/shared", "Secret/db"}
	values, calls := counted(want)
	a, _ := From(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	for i := range 3 {
		if got := Indexed(a, values); !slices.Equal(got, want) {
			t.Fatalf("call %d: %q, want %q", i, got, want)
		}
	}
	if *calls != 1 {
		t.Fatalf("the index function ran %d times for one Workload, want 1", *calls)
	}
	// Another Workload (the copy an update brings) is computed anew.
	b, _ := From(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	got := Indexed(b, values)
	if *calls != 2 || !slices.Equal(got, want) {
		t.Fatalf("second Workload: %d calls, %q", *calls, got)
	}
	// Its values are the first one's strings, not copies.
	if unsafe.StringData(got[0]) != unsafe.StringData(Indexed(a, values)[0]) {
		t.Error("equal values of two Workloads are two strings")
	}
}

func TestIndexed_KeepsNoValues(t *testing.T) {
	values, calls := counted(nil)
	w, _ := From(&appsv1.StatefulSet{})
	for range 2 {
		if got := Indexed(w, values); got != nil {
			t.Fatalf("%q, want none", got)
		}
	}
	if *calls != 1 {
		t.Errorf("a Workload without values ran the index function %d times, want 1", *calls)
	}
}

func TestIndexed_OtherObjectsComputeEachTime(t *testing.T) {
	want := []string{"ConfigMap/cfg"}
	values, calls := counted(want)
	j := &batchv1.Job{}
	for range 2 {
		if got := Indexed(j, values); !slices.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	}
	if *calls != 2 {
		t.Errorf("a Job's values were computed %d times in 2 calls, want 2 (nothing is kept with it)", *calls)
	}
}

// client-go's indexer computes the index values of the copy an update
// replaces again, to remove them: with the values kept, an add and an
// update of one key run the index function twice (once per copy), not
// three times.
func TestIndexed_AnUpdateComputesTheNewCopyOnly(t *testing.T) {
	values, calls := counted([]string{"ConfigMap/shared"})
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"references": func(obj any) ([]string, error) {
		return Indexed(obj.(client.Object), values), nil
	}})
	copyOf := func() client.Object {
		w, _ := From(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
		return w
	}
	if err := indexer.Add(copyOf()); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Update(copyOf()); err != nil {
		t.Fatal(err)
	}
	found, err := indexer.ByIndex("references", "ConfigMap/shared")
	if err != nil || len(found) != 1 {
		t.Fatalf("the index holds %d objects under the value (%v), want the updated copy", len(found), err)
	}
	if *calls != 2 {
		t.Errorf("an add and an update ran the index function %d times, want 2", *calls)
	}
}
