package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/events"
)

// eventBodies records the Content-Type of the body of each Event POST.
type eventBodies struct {
	mu    sync.Mutex
	types []string
}

func (e *eventBodies) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/events") {
			e.mu.Lock()
			e.types = append(e.types, req.Header.Get("Content-Type"))
			e.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (e *eventBodies) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.types...)
}

// recordTwice starts a manager built by newManager from cfg, records the
// same Warning Event twice about cm through GetEventRecorderFor(FieldManager)
// (the correlator aggregates them into one Event of count 2), waits for it
// and returns it as the API server stores it, once the manager has stopped.
func recordTwice(t *testing.T, cfg *rest.Config, cm *corev1.ConfigMap,
	newManager func(*rest.Config, ctrl.Options) (ctrl.Manager, error)) corev1.Event {
	t.Helper()
	g := newT(t)
	mgr, err := newManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	rec := mgr.GetEventRecorderFor(FieldManager) //nolint:staticcheck // as the reconcilers record
	rec.Eventf(cm, corev1.EventTypeWarning, "NotRolled", "ConfigMap %s: %s", cm.Name, "a test note")
	var got corev1.Event
	g.Eventually(func(g gomega.Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(t.Context(), &list, client.InNamespace(cm.Namespace))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(1))
		got = list.Items[0]
	}).Should(gomega.Succeed())
	rec.Eventf(cm, corev1.EventTypeWarning, "NotRolled", "ConfigMap %s: %s", cm.Name, "a test note")
	g.Eventually(func(g gomega.Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(t.Context(), &list, client.InNamespace(cm.Namespace))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(1))
		got = list.Items[0]
		g.Expect(got.Count).To(gomega.BeEquivalentTo(2))
	}).Should(gomega.Succeed())
	cancel()
	g.Eventually(done, 30*time.Second).Should(gomega.Receive(gomega.BeNil()))
	return got
}

// TestNewManager_PostsEventsInProtobufWithTheSameFields records the same
// Event through controller-runtime's recorder and through NewManager's, and
// compares what the API server stores: the same reason, message, type,
// involved object, source and count, with a protobuf request body in place
// of JSON.
func TestNewManager_PostsEventsInProtobufWithTheSameFields(t *testing.T) {
	g := newT(t)
	var stored []corev1.Event
	for _, c := range []struct {
		newManager func(*rest.Config, ctrl.Options) (ctrl.Manager, error)
		body       string // Content-Type of every Event POST
	}{
		// Positive control: controller-runtime's recorder sends JSON.
		{ctrl.NewManager, runtime.ContentTypeJSON},
		{events.NewManager, runtime.ContentTypeProtobuf},
	} {
		ns := newNamespace(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"k": "v"}}
		g.Expect(k8s.Create(t.Context(), cm)).To(gomega.Succeed())
		bodies := &eventBodies{}
		cfg := rest.CopyConfig(plane.Config)
		PreferProtobuf(cfg) // as cmd/reroll does
		cfg.Wrap(bodies.wrap)
		e := recordTwice(t, cfg, cm, c.newManager)
		g.Expect(bodies.get()).NotTo(gomega.BeEmpty())
		g.Expect(bodies.get()).To(gomega.HaveEach(c.body))
		g.Expect(e.InvolvedObject).To(gomega.Equal(corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1",
			Namespace: ns, Name: "app", UID: cm.UID, ResourceVersion: cm.ResourceVersion}))
		stored = append(stored, e)
	}
	crt, own := stored[0], stored[1]
	g.Expect(own.Message).To(gomega.Equal("ConfigMap app: a test note"))
	for _, e := range []*corev1.Event{&crt, &own} {
		// What differs by nature: the namespace, the object, the times.
		e.ObjectMeta = metav1.ObjectMeta{}
		e.InvolvedObject.Namespace, e.InvolvedObject.UID, e.InvolvedObject.ResourceVersion = "", "", ""
		e.FirstTimestamp, e.LastTimestamp = metav1.Time{}, metav1.Time{}
	}
	g.Expect(own).To(gomega.Equal(crt))
	g.Expect([]any{own.Reason, own.Type, own.Source.Component, own.Count}).To(gomega.Equal([]any{"NotRolled", corev1.EventTypeWarning, FieldManager, int32(2)}))
}

// BenchmarkEventPost posts one Event per op to the local API server through
// client-go's Event sink, as the recorder does, with cmd/reroll's client
// configuration: a JSON body (controller-runtime's recorder) against a
// protobuf body (NewManager's). allocs/op are this process's only; the time
// includes the API server's.
func BenchmarkEventPost(b *testing.B) {
	if plane == nil {
		b.Skip("needs the control plane")
	}
	ns := "default"
	for _, c := range []struct{ name, contentType string }{
		{"body=json", ""},
		{"body=protobuf", runtime.ContentTypeProtobuf},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := rest.CopyConfig(plane.Config)
			PreferProtobuf(cfg)
			cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
			cfg.ContentType = c.contentType
			cs, err := corev1client.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			sink := &corev1client.EventSinkImpl{Interface: cs.Events("")}
			e := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns},
				InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "web", APIVersion: "apps/v1",
					UID: "0b8c3a2e-7f0e-4c4e-9d53-1f5f3c1b2a10", ResourceVersion: "12345"},
				Reason: "Rolled", Type: corev1.EventTypeNormal,
				Message: `Rolled Deployment web: ConfigMap "shared" changed (keys: config.yaml), annotations strategy`,
				Source:  corev1.EventSource{Component: FieldManager}, Count: 1,
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				e.Name = fmt.Sprintf("web.%s.%d", strings.TrimPrefix(c.name, "body="), i)
				if _, err := sink.Create(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
