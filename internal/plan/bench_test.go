package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// fanoutCase is one Deployment of the fanout bench profile (hack/bench):
// one container reading every key of one ConfigMap of three keys through
// envFrom, opted in with reloader.stakater.com/auto, Reroll's defaults and a
// real installation key. It returns the options, the workload's input with
// the record of the ConfigMap's first version, and the ConfigMap's first
// and second versions as Sources.
func fanoutCase(b *testing.B) (Options, Input, memory, memory) {
	b.Helper()
	o := DefaultOptions()
	key, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	o.Key = key
	data := func(greeting string) map[string]string {
		return map[string]string{"CONFIG": "info", "FEATURE_FLAGS": "a,b,c", "GREETING": greeting}
	}
	before := memory{cm("shared"): obj(data("hello"), nil, "1")}
	after := memory{cm("shared"): obj(data("hello again"), nil, "2")}
	t := template([]string{"shared"})
	t.Labels = map[string]string{"app": "sh-1"}
	t.Spec.Containers[0].Image = "registry.example/app:1"
	in := Input{Kind: "Deployment", Namespace: "ns", Name: "sh-1", UID: "5b6b4a0e-8d2f-4c51-9a57-6c2f3e0f9d11", Now: now,
		Annotations: map[string]string{"reloader.stakater.com/auto": "true"}, Template: t, Pausable: true,
		Action: workload.Action{Way: workload.ByTemplate}, Restart: &RestartInput{Mode: eviction.Mode{MaxUnavailable: 1}, TemplateInObject: true}}
	first, err := DecideChange(o, in, before)
	if err != nil || first.Outcome != FirstSight {
		b.Fatalf("recording: %v, outcome %s", err, first.Outcome)
	}
	in.Annotations[RecordAnnotation] = first.Record.String()
	in.Annotations[KeyAnnotation] = o.Key.ID()
	return o, in, before, after
}

// BenchmarkDecide_Fanout measures the decisions one Deployment of the fanout
// profile costs: the change of its ConfigMap that rolls it, and the
// reconcile of the watch event of Reroll's own write, which finds its
// record current and its template patch young (so the revert check
// fingerprints the template).
func BenchmarkDecide_Fanout(b *testing.B) {
	b.Run("a change rolls", func(b *testing.B) {
		o, in, _, after := fanoutCase(b)
		v := view{memory: after, calls: new([]string)}
		b.ReportAllocs()
		for b.Loop() {
			p, err := Decide(o, in, v)
			if err != nil || p.Outcome != Roll {
				b.Fatalf("outcome %s, error %v", p.Outcome, err)
			}
		}
	})
	b.Run("the own write's event decides nothing", func(b *testing.B) {
		o, in, _, after := fanoutCase(b)
		rolled, err := Decide(o, in, view{memory: after, calls: new([]string)})
		if err != nil || rolled.Outcome != Roll {
			b.Fatalf("outcome %s, error %v", rolled.Outcome, err)
		}
		for k, v := range rolled.Annotations {
			in.Annotations[k] = v
		}
		fp := revert.Fingerprint(in.Template)
		in.Annotations[revert.PatchAnnotation] = revert.Patch{Before: "0011223344556677", After: fp, At: now.Add(-time.Second)}.String()
		v := view{memory: after, calls: new([]string)}
		b.ReportAllocs()
		for b.Loop() {
			p, err := Decide(o, in, v)
			if err != nil || p.Outcome != Unchanged {
				b.Fatalf("outcome %s, error %v", p.Outcome, err)
			}
		}
	})
}

// BenchmarkRecord_String measures the encoding of a record of one
// ConfigMap of three keys, as RecordAnnotation holds it.
func BenchmarkRecord_String(b *testing.B) {
	r := Record{"ConfigMap/shared": {"CONFIG": "6b86b273ff34fce1", "FEATURE_FLAGS": "d4735e3a265e16ee", "GREETING": "4e07408562bedb8b"}}
	b.ReportAllocs()
	for b.Loop() {
		if len(r.String()) == 0 {
			b.Fatal("empty")
		}
	}
}

// BenchmarkFingerprint measures revert.Fingerprint of the fanout profile's
// pod template, which a rollout computes twice (before and after) and the
// reconcile of its own write once more.
func BenchmarkFingerprint(b *testing.B) {
	t := template([]string{"shared"})
	t.Labels = map[string]string{"app": "sh-1"}
	t.Annotations = map[string]string{"reroll.dev/config-hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	t.Spec.Containers[0].Image = "registry.example/app:1"
	var _ *corev1.PodTemplateSpec = t
	b.ReportAllocs()
	for b.Loop() {
		if revert.Fingerprint(t) == "" {
			b.Fatal("empty")
		}
	}
}

// BenchmarkDecide_FirstSight measures the decision on a Deployment of the
// fanout profile that Reroll sees for the first time (no record): what the
// first pass after a start costs per workload (2,050 of them).
func BenchmarkDecide_FirstSight(b *testing.B) {
	o, in, before, _ := fanoutCase(b)
	delete(in.Annotations, RecordAnnotation)
	delete(in.Annotations, KeyAnnotation)
	v := view{memory: before, calls: new([]string)}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Decide(o, in, v)
		if err != nil || p.Outcome != FirstSight {
			b.Fatalf("outcome %s, error %v", p.Outcome, err)
		}
	}
}
