package lazysink

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// BenchmarkSink_ReconcileWithValues is the WithValues of one reconcile as
// controller-runtime's builder makes them (the object, its namespace and
// name, then the reconcile ID, on a logger that already carries the
// controller's pairs), on a reconcile that writes no line.
func BenchmarkSink_ReconcileWithValues(b *testing.B) {
	base := New(zapr.NewLogger(zap.New(zapcore.NewNopCore()))).
		WithValues("controller", "deployment").WithValues("controllerGroup", "apps", "controllerKind", "Deployment")
	ref := klog.KRef("fanout", "app-1234")
	b.ReportAllocs()
	var l logr.Logger
	for b.Loop() {
		l = base.WithValues("Deployment", ref).
			WithValues("namespace", "fanout", "name", "app-1234").
			WithValues("reconcileID", "6c1f8a2e-3b7d-4c52-9e0a-1d2f3a4b5c6d")
	}
	_ = l
}
