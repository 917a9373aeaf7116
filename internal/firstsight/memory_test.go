package firstsight

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
)

// record returns a record as plan.Record.String encodes it, in a string of
// its own each call (as each reconcile encodes its plan's).
func record(configMap string) string {
	return fmt.Sprintf(`{"ConfigMap/%s":{"FEATURE_FLAGS":"5d3c0e8a1f2b4c6d","LOG_LEVEL":"0a1b2c3d4e5f6a7b"}}`, configMap)
}

// TestMemory_WorkloadsThatReadTheSameObjectsShareOneBaseline: 2,000
// workloads reading one ConfigMap, their first sights interleaved with
// those of workloads that read their own, hold one copy of the shared
// baseline; each workload's baseline is its own record.
func TestMemory_WorkloadsThatReadTheSameObjectsShareOneBaseline(t *testing.T) {
	m := NewMemory()
	const shared, own = 2000, 50
	for i := range shared {
		m.Keep(types.UID(fmt.Sprintf("shared-%d", i)), record("shared"))
		if i%(shared/own) == 0 {
			m.Keep(types.UID(fmt.Sprintf("own-%d", i)), record(fmt.Sprintf("own-%d", i)))
		}
	}
	// Positive control: each workload has its own record, whatever it
	// shares.
	for i := range shared {
		if i%(shared/own) == 0 {
			if got, want := m.Baseline(types.UID(fmt.Sprintf("own-%d", i))), record(fmt.Sprintf("own-%d", i)); got != want {
				t.Fatalf("baseline of own-%d = %s, want %s", i, got, want)
			}
		}
	}
	copies := map[*byte]bool{}
	for i := range shared {
		b := m.Baseline(types.UID(fmt.Sprintf("shared-%d", i)))
		if b != record("shared") {
			t.Fatalf("baseline of shared-%d = %s, want %s", i, b, record("shared"))
		}
		copies[unsafe.StringData(b)] = true
	}
	if len(copies) != 1 {
		t.Errorf("%d workloads with one record hold %d copies of it, want 1", shared, len(copies))
	}
}

// TestMemory_KeepsEveryRecordPastTheRecentOnes: records that no longer
// match a recent one are still each workload's own, and a workload kept
// again holds its new record.
func TestMemory_KeepsEveryRecordPastTheRecentOnes(t *testing.T) {
	m := NewMemory()
	const n = 5 * recentRecords
	for i := range n {
		m.Keep(types.UID(fmt.Sprint(i)), record(fmt.Sprint(i%(2*recentRecords))))
	}
	m.Keep("0", record("changed"))
	m.Forget("1")
	for i := range n {
		want := record(fmt.Sprint(i % (2 * recentRecords)))
		switch i {
		case 0:
			want = record("changed")
		case 1:
			want = ""
		}
		if got := m.Baseline(types.UID(fmt.Sprint(i))); got != want {
			t.Errorf("baseline of %d = %q, want %q", i, got, want)
		}
	}
	if got := m.Baseline("2"); !strings.Contains(got, "ConfigMap/2") {
		t.Errorf("baseline of 2 = %q", got)
	}
}
