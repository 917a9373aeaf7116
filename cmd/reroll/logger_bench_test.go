package main

import (
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/reroll/reroll/internal/controller"
)

// BenchmarkLogger_RolledLine is one fan-out reconcile's logging: the pairs
// controller-runtime's builder adds (the controller, then per reconcile the
// object as a klog.ObjectRef, its namespace and name, then the reconcile
// ID) and the "Rolled workload" line, through the production logger (text
// format) into io.Discard, so the write's system call is left out.
func BenchmarkLogger_RolledLine(b *testing.B) {
	log, err := newLoggerTo(io.Discard, "text", "info")
	if err != nil {
		b.Fatal(err)
	}
	base := log.WithValues("controller", "deployment").WithValues("controllerGroup", "apps", "controllerKind", "Deployment")
	b.ReportAllocs()
	for b.Loop() {
		l := base.WithValues("Deployment", klog.KRef("fanout", "app-1234")).
			WithValues("namespace", "fanout", "name", "app-1234").
			WithValues("reconcileID", types.UID("6c1f8a2e-3b7d-4c52-9e0a-1d2f3a4b5c6d"))
		l.Info(controller.AuditRolled, "changes", `ConfigMap "shared" changed (keys: config.yaml)`, "way", "annotation", "strategy", "annotations", "dialect", "reroll")
	}
}
