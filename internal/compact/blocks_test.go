package compact

import (
	"fmt"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deployments returns n Deployments with the fixtures' metadata and a
// trimmed spec.
func deployments(n int) []*appsv1.Deployment {
	out := make([]*appsv1.Deployment, n)
	for i := range out {
		out[i] = &appsv1.Deployment{ObjectMeta: meta(fmt.Sprintf("web-%d", i)), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: template}}
	}
	return out
}

func TestBlocks_OneAllocationPerBlockOfWorkloads(t *testing.T) {
	// blockLen From calls, starting a block: the allocations they make
	// with and without blocks.
	froms := func(on bool) float64 {
		return testing.AllocsPerRun(20, func() {
			var b Blocks
			b.SetOn(on)
			for _, d := range deployments(blockLen) {
				if _, ok := b.From(d); !ok {
					t.Fatal("From failed")
				}
			}
		})
	}
	off, on := froms(false), froms(true)
	if off-on != blockLen-1 {
		t.Errorf("%d From calls allocate %v objects one by one and %v in a block: want %d fewer (one array for %d Workloads)", blockLen, off, on, blockLen-1, blockLen)
	}
}

func TestBlocks_BlockIsOneArrayOfWorkloadsThatExpandToTheObjects(t *testing.T) {
	var b Blocks
	b.SetOn(true)
	in := deployments(blockLen + 1)
	want := make([]*appsv1.Deployment, len(in))
	for i, d := range in {
		want[i] = d.DeepCopy()
	}
	got := make([]*Workload, len(in))
	for i, d := range in {
		obj, ok := b.From(d)
		if !ok {
			t.Fatal("From failed")
		}
		got[i] = obj.(*Workload)
	}
	for i := 1; i < blockLen; i++ {
		if uintptr(unsafe.Pointer(got[i])) != uintptr(unsafe.Pointer(got[i-1]))+unsafe.Sizeof(Workload{}) {
			t.Fatalf("Workload %d is not next to Workload %d in one array", i, i-1)
		}
	}
	for i, w := range got {
		if d := Expand(w).(*appsv1.Deployment); !equality.Semantic.DeepEqual(d, want[i]) {
			t.Errorf("Workload %d expands to %+v, want %+v", i, d, want[i])
		}
	}
}

func TestBlocks_BlockFillsOneSizeClass(t *testing.T) {
	// 8 KiB, the size class of an array of blockLen Workloads with the
	// runtime's 8-byte header of an object with pointers over 512 bytes:
	// one more Workload would need the next class (9,472 bytes).
	size := unsafe.Sizeof(Workload{})
	if size*blockLen+8 > 8192 || size*(blockLen+1)+8 <= 8192 {
		t.Errorf("a Workload takes %d bytes: %d of them fill 8 KiB best, not %d", size, (8192-8)/size, blockLen)
	}
}

func TestBlocks_OffOrNilAllocatesEachWorkloadByItself(t *testing.T) {
	var on, turnedOff Blocks
	on.SetOn(true)
	turnedOff.SetOn(true)
	if !turnedOff.On() {
		t.Fatal("SetOn(true): not on")
	}
	turnedOff.SetOn(false)
	var none *Blocks
	// blockLen calls from a fresh array each run: as many allocations as
	// Workloads allocated one by one, less blockLen-1.
	allocs := func(from func(any) (client.Object, bool)) float64 {
		return testing.AllocsPerRun(20, func() {
			for _, d := range deployments(blockLen) {
				if _, ok := from(d); !ok {
					t.Fatal("From failed")
				}
			}
			on.SetOn(false)
			on.SetOn(true)
		})
	}
	byItself := allocs(From)
	if got := allocs(on.From); got != byItself-(blockLen-1) {
		t.Fatalf("on: %d From calls allocate %v objects, want %v", blockLen, got, byItself-(blockLen-1))
	}
	for name, from := range map[string]func(any) (client.Object, bool){"turned off": turnedOff.From, "nil": none.From} {
		if turnedOff.On() || none.On() {
			t.Fatal("on after SetOn(false), or nil on")
		}
		if got := allocs(from); got != byItself {
			t.Errorf("%s: %d From calls allocate %v objects, want %v as From does", name, blockLen, got, byItself)
		}
	}
}
