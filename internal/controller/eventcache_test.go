package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/events"
)

// Issue #36: client-go's correlator kept 4,096 entries per cache, about
// 2 MiB after a fan-out. Reroll's keeps EventCacheSize: a repeated Event
// still counts up (the cache works), and an object pushed out by
// EventCacheSize others gets a new Event (the cache is that small; with
// client-go's default the third Event would count 3 on one).
func TestNewManager_RepeatedEventsCountUpUntilEventCacheSizeOtherObjects(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	cfg := rest.CopyConfig(plane.Config)
	PreferProtobuf(cfg) // as cmd/reroll does
	cfg.QPS, cfg.Burst = 1000, 1000
	mgr, err := events.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(gomega.Receive(gomega.BeNil()))
	})
	rec := mgr.GetEventRecorderFor(FieldManager) //nolint:staticcheck // as the reconcilers record
	obj := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	}
	// counts returns the Count of each Event on the named object.
	counts := func(name string) []int32 {
		var list corev1.EventList
		g.Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
		var out []int32
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name {
				g.Expect(e.Source.Component).To(gomega.Equal(FieldManager))
				out = append(out, max(e.Count, 1))
			}
		}
		return out
	}

	rec.Event(obj("a"), corev1.EventTypeNormal, "Test", "the same note")
	g.Eventually(func() []int32 { return counts("a") }).Should(gomega.Equal([]int32{1}))
	rec.Event(obj("a"), corev1.EventTypeNormal, "Test", "the same note")
	g.Eventually(func() []int32 { return counts("a") }).Should(gomega.Equal([]int32{2}), "a repeat counts up on the same Event")

	for i := range events.EventCacheSize {
		rec.Event(obj(fmt.Sprintf("other-%d", i)), corev1.EventTypeNormal, "Test", "the same note")
	}
	g.Eventually(func() []int32 { return counts(fmt.Sprintf("other-%d", events.EventCacheSize-1)) }).Should(gomega.Equal([]int32{1}))
	rec.Event(obj("a"), corev1.EventTypeNormal, "Test", "the same note")
	g.Eventually(func() []int32 { return counts("a") }).Should(gomega.ConsistOf(int32(2), int32(1)),
		"after EventCacheSize other objects, a's Event is a new one")
}
