package controller

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
)

// answerTypes records the Content-Type of each answer by the resource of
// its request ("events", "secretproviderclasspodstatuses").
type answerTypes struct {
	mu    sync.Mutex
	types map[string][]string
}

func (a *answerTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
			a.mu.Lock()
			a.types[parts[len(parts)-1]] = append(a.types[parts[len(parts)-1]], resp.Header.Get("Content-Type"))
			a.mu.Unlock()
		}
		return resp, err
	})
}

func (a *answerTypes) of(resource string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.types[resource]...)
}

// postEvent posts an Event the way client-go's Event recorder does
// (record.EventSink's Create) through a client built from cfg.
func postEvent(t *testing.T, cfg *rest.Config, ns, name string) *corev1.Event {
	t.Helper()
	g := newT(t)
	cs, err := corev1client.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	sink := &corev1client.EventSinkImpl{Interface: cs.Events("")}
	got, err := sink.Create(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "app", APIVersion: "v1"},
		Reason:         "Test", Message: "a test Event", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: FieldManager},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return got
}

func TestPreferProtobuf_EventsAreAnsweredInProtobufAndCustomResourcesStillRead(t *testing.T) {
	g := newT(t)
	ns := newNamespace(t)
	providerClassStatusCRD(t)

	// Positive control: client-go's Event sink asks for JSON by itself.
	plain := &answerTypes{types: map[string][]string{}}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(plain.wrap)
	postEvent(t, cfg, ns, "plain")
	g.Expect(plain.of("events")).To(gomega.Equal([]string{runtime.ContentTypeJSON}))

	answers := &answerTypes{types: map[string][]string{}}
	cfg = rest.CopyConfig(plane.Config)
	PreferProtobuf(cfg)
	cfg.Wrap(answers.wrap)
	got := postEvent(t, cfg, ns, "protobuf")
	g.Expect(answers.of("events")).To(gomega.Equal([]string{runtime.ContentTypeProtobuf}))
	// The answer decodes into the Event the server stored.
	g.Expect(got.UID).NotTo(gomega.BeEmpty())
	g.Expect([]string{got.Name, got.Reason, got.Message}).To(gomega.Equal([]string{"protobuf", "Test", "a test Event"}))

	// A custom resource, typed in Reroll's scheme, has no protobuf: the
	// server answers JSON, which controller-runtime's client reads.
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	st := &csiv1.SecretProviderClassPodStatus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "status"},
		Status: csiv1.SecretProviderClassPodStatusStatus{PodName: "pod", SecretProviderClassName: "class", Mounted: true}}
	g.Expect(c.Create(t.Context(), st)).To(gomega.Succeed())
	read := &csiv1.SecretProviderClassPodStatus{}
	g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(st), read)).To(gomega.Succeed())
	g.Expect(read.Status.SecretProviderClassName).To(gomega.Equal("class"))
	g.Expect(answers.of("secretproviderclasspodstatuses")).To(gomega.HaveEach(gomega.HavePrefix(runtime.ContentTypeJSON)))
}
