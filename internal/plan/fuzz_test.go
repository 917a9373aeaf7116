package plan

import (
	"testing"
	"time"

	"github.com/reroll/reroll/internal/digest"
)

// FuzzParseRecord checks the record parser: it never panics, and a record
// it accepts encodes to a value it reads back equal.
func FuzzParseRecord(f *testing.F) {
	f.Add(`{"ConfigMap/cfg":{"a":"0123456789abcdef"},"Secret/gone":null}`)
	f.Add(`{"ConfigMap/cfg":{"a":""}}`)
	f.Add(`null`)
	f.Add(`{"`)
	f.Fuzz(func(t *testing.T, v string) {
		o, err := ParseRecord(v)
		if err != nil || o == nil {
			// Invalid, or "": nothing recorded.
			return
		}
		again, err := ParseRecord(o.String())
		if err != nil {
			t.Fatalf("re-reading %q: %v", o.String(), err)
		}
		if again.String() != o.String() {
			t.Fatalf("round trip changed %q to %q", o.String(), again.String())
		}
	})
}

// FuzzStateAnnotations feeds the state annotations a tenant can write on a
// workload (reroll.dev/pending, reroll.dev/rolled-at) and a Namespace
// (reroll.dev/max-concurrent-rollouts) to their readers: they never panic,
// a state value is honoured only when it carries Reroll's signature of
// exactly that value for that object and annotation, and the namespace
// bound is positive or refused.
func FuzzStateAnnotations(f *testing.F) {
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f.Add(Sign(k, "uid-1", PendingAnnotation, "2026-11-26T11:00:00Z window"), "2026-11-26T11:00:00Z sig=00", "3")
	f.Add("2020-01-01T00:00:00Z bound", Sign(k, "uid-1", RolledAtAnnotation, "2999-01-01T00:00:00Z"), "0")
	f.Add(" sig=", " sig= sig=", "-1")
	f.Add("garbage", "", " 12 ")
	f.Fuzz(func(t *testing.T, pending, rolledAt, bound string) {
		ann := map[string]string{PendingAnnotation: pending, RolledAtAnnotation: rolledAt}
		for name, v := range ann {
			value, ok := Verified(k, "uid-1", name, ann)
			if ok && Sign(k, "uid-1", name, value) != v {
				t.Fatalf("%s %q verified as %q, which Reroll signs otherwise", name, v, value)
			}
			if _, other := Verified(k, "uid-2", name, ann); ok && other {
				t.Fatalf("%s %q verified for another object", name, v)
			}
		}
		_ = PendingSince(k, "uid-1", ann, now)
		_ = PendingReason(k, "uid-1", ann)
		_, _ = RolledAt(k, "uid-1", ann)
		_, namespace, problem := Options{}.bounds(Input{NamespaceAnnotations: map[string]string{MaxConcurrentRolloutsAnnotation: bound}})
		if (problem == nil) != (namespace > 0) {
			t.Fatalf("bound %q: namespace %d, problem %v", bound, namespace, problem)
		}
	})
}
