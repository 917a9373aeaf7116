package projection

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
)

func TestMetrics_CountProjectionsWritesAndFailures(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	m.set(a, true)
	m.set(b, false)
	m.set(b, false)
	m.wrote()
	m.failed(ReasonForbidden)
	m.failed(ReasonForbidden)
	cases := map[string]struct {
		got  prometheus.Collector // the metric
		want float64              // its value
	}{
		"ready":                {got: m.projections.WithLabelValues("true"), want: 1},
		"not ready":            {got: m.projections.WithLabelValues("false"), want: 1},
		"writes":               {got: m.writes, want: 1},
		"forbidden failures":   {got: m.failures.WithLabelValues(ReasonForbidden), want: 2},
		"conflicts (none yet)": {got: m.failures.WithLabelValues(ReasonConflict), want: 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if v := testutil.ToFloat64(c.got); v != c.want {
				t.Fatalf("%s = %v, want %v", name, v, c.want)
			}
		})
	}
	m.forget(b)
	if v := testutil.ToFloat64(m.projections.WithLabelValues("false")); v != 0 {
		t.Fatalf("after forgetting b, not ready = %v, want 0", v)
	}
	var none *projectionMetrics
	none.set(a, true) // a nil *projectionMetrics records nothing and does not panic
}
