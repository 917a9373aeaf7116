package eviction

import (
	"strings"
	"testing"
)

// FuzzParseMode feeds a workload's restart annotations to ParseMode: it
// never panics, always leaves at least one pod to evict at a time and at
// most the desired pods when a percentage is given, and reports every
// value it does not take.
func FuzzParseMode(f *testing.F) {
	for _, seed := range []string{"1", "0", "0%", "50%", "100%", "1000%", "-2", "lots%", "99999999999999999999"} {
		f.Add("evict", seed, 3)
	}
	f.Fuzz(func(t *testing.T, restart, maxUnavailable string, desired int) {
		desired = min(max(desired, 0), 10000)
		m, problems := ParseMode(map[string]string{RestartAnnotation: restart, MaxUnavailableAnnotation: maxUnavailable}, desired)
		if m.MaxUnavailable < 1 {
			t.Fatalf("max-unavailable %d from %q", m.MaxUnavailable, maxUnavailable)
		}
		if strings.HasSuffix(strings.TrimSpace(maxUnavailable), "%") && m.MaxUnavailable > max(desired, 1) {
			t.Fatalf("max-unavailable %d of %d desired from %q", m.MaxUnavailable, desired, maxUnavailable)
		}
		for _, p := range problems {
			if !strings.HasPrefix(p.Error(), "annotation reroll.dev/") {
				t.Fatalf("problem %q names no annotation", p)
			}
		}
	})
}

// FuzzParseProgress feeds the eviction progress annotation, which a tenant
// can write, to ParseProgress: it never panics, and what it accepts has a
// hash and a start.
func FuzzParseProgress(f *testing.F) {
	for _, seed := range []string{"", `{"hash":"h","since":"2026-11-22T12:00:00Z"}`, `{"hash":""}`, "{", "null", `{"hash":"h","since":"x"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := ParseProgress(v)
		if err != nil || p == nil {
			return
		}
		if p.Hash == "" || p.Since.IsZero() {
			t.Fatalf("accepted %q without hash or since", v)
		}
	})
}
