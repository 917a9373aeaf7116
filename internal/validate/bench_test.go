package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
)

// bigAppConfig returns a JSON document of about size bytes: replicas, an
// image, and a list of entries, each an object of a name, a port and
// labels, as a large application config holds.
func bigAppConfig(b *testing.B, size int) string {
	b.Helper()
	type entry struct {
		Name   string            `json:"name"`
		Port   int               `json:"port"`
		Labels map[string]string `json:"labels"`
	}
	doc := struct {
		Replicas int     `json:"replicas"`
		Image    string  `json:"image"`
		Entries  []entry `json:"entries"`
	}{Replicas: 3, Image: "registry.example/app:1.2.3"}
	for n := 0; ; n++ {
		doc.Entries = append(doc.Entries, entry{Name: fmt.Sprintf("backend-%06d", n), Port: 8000 + n%1000,
			Labels: map[string]string{"tier": "backend", "zone": fmt.Sprintf("zone-%d", n%3)}})
		if n%256 == 0 {
			out, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			for len(out) > size {
				// Drop as many entries as the excess holds at least (each is
				// over 60 bytes), and measure again.
				doc.Entries = doc.Entries[:len(doc.Entries)-(len(out)-size)/60-1]
				if out, err = json.Marshal(doc); err != nil {
					b.Fatal(err)
				}
				if len(out) <= size {
					return string(out)
				}
			}
		}
	}
}

// BenchmarkEvaluate_1MiBConfigMap measures the validation of one change: a
// ConfigMap of 1 MiB (the API server's limit), whose one key app.json is
// checked against a JSON Schema (draft 2020-12: types, required, bounds, a
// pattern, and a schema for each entry of a list) and a CEL rule that
// parses it (json(data['app.json']).replicas <= 10). It reports the
// median (p50-ns/change) and the 99th percentile (p99-ns/change) of the
// iterations besides Go's mean. `make bench-validate` runs it;
// docs/benchmarks.md records the numbers.
func BenchmarkEvaluate_1MiBConfigMap(b *testing.B) {
	const size = 1 << 20
	cfg := bigAppConfig(b, size-len("app.json"))
	v, err := Compile(validator(rerollv1.KindConfigMap,
		rerollv1.ValidationRule{Name: "app-schema", Key: "app.json", Format: rerollv1.FormatJSON, Schema: schema(`{
			"type": "object",
			"required": ["replicas", "image", "entries"],
			"properties": {
				"replicas": {"type": "integer", "minimum": 1, "maximum": 10},
				"image": {"type": "string", "pattern": "^[a-z0-9./-]+:[a-z0-9.-]+$"},
				"entries": {"type": "array", "items": {
					"type": "object",
					"required": ["name", "port"],
					"properties": {
						"name": {"type": "string", "maxLength": 63},
						"port": {"type": "integer", "minimum": 1, "maximum": 65535},
						"labels": {"type": "object", "additionalProperties": {"type": "string"}}
					}
				}}
			}
		}`)},
		rerollv1.ValidationRule{Name: "replicas", Expression: "json(data['app.json']).replicas <= 10"},
	))
	if err != nil {
		b.Fatal(err)
	}
	obj := object(rerollv1.KindConfigMap, map[string]string{"app.json": cfg})
	if s := obj.size(); s > MaxObjectBytes || s < size-1024 {
		b.Fatalf("the object is %d bytes, want just under %d", s, MaxObjectBytes)
	}
	now := time.Now()
	if fs := Evaluate(b.Context(), []*Validator{v}, obj, now); len(fs) > 0 {
		b.Fatalf("the content must pass (a failing one may stop early): %v", fs)
	}
	durations := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(obj.size()))
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if fs := Evaluate(b.Context(), []*Validator{v}, obj, now); len(fs) > 0 {
			b.Fatalf("findings: %v", fs)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	at := func(q float64) float64 { return float64(durations[int(q*float64(len(durations)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns/change")
	b.ReportMetric(at(0.99), "p99-ns/change")
}
