package controller

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/workload"
)

// patchResponses records the start of the answer to each PATCH of a
// Deployment a client sends: its Content-Type and the first bytes of its body, which hold the
// kind of the object sent back (the protobuf envelope, or JSON's kind).
type patchResponses struct {
	mu      sync.Mutex
	answers []string
	next    http.RoundTripper
}

func (p *patchResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPatch || !strings.Contains(r.URL.Path, "/deployments/") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.answers = append(p.answers, resp.Header.Get("Content-Type")+" "+strconv.Quote(string(body[:min(len(body), 80)])))
	p.mu.Unlock()
	return resp, nil
}

func (p *patchResponses) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.answers...)
}

// TestPatch_RolloutGetsOnlyMetadataBack writes a rollout by annotation (a
// record in the metadata, a trigger in the pod template) as the write step
// does, and checks what a user sees (both written, the generation bumped)
// and what the caller gets back: the API server's metadata (the
// resourceVersion OwnWrites keys on, the generation, the annotations),
// from an answer of PartialObjectMetadata, not the whole Deployment. A
// second write from the stale copy is still a conflict, which the
// reconciler retries from a fresh read.
func TestPatch_RolloutGetsOnlyMetadataBack(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, deployment(ns, "web", autoOn, podSpec()))

	// The clients as the controller builds them: the metadata client
	// shares the typed client's HTTP client.
	responses := &patchResponses{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { responses.next = rt; return responses })
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: hc})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	mc, err := metadata.NewForConfigAndClient(cfg, hc)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	clients := workload.Clients{Client: c, Metadata: mc}

	// The Deployment's controller writes its status meanwhile: read and
	// write again after a conflict, as the reconciler would.
	var obj appsv1.Deployment
	var desired *appsv1.Deployment
	g.Eventually(func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, &obj); err != nil {
			return err
		}
		desired = obj.DeepCopy()
		workload.SetAnnotation(desired, "reroll.dev/observed", `{"ConfigMap/cfg":{"a":"01"}}`)
		desired.Spec.Template.Annotations = map[string]string{"reroll.dev/config-hash": "abc"}
		return workload.PatchGuarded(t.Context(), clients, &obj, desired)
	}).Should(gomega.Succeed())

	// What a user sees: the record and the trigger, a new generation.
	var got appsv1.Deployment
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, &got)).To(gomega.Succeed())
	g.Expect(got.Annotations).To(gomega.HaveKeyWithValue("reroll.dev/observed", `{"ConfigMap/cfg":{"a":"01"}}`))
	g.Expect(got.Spec.Template.Annotations).To(gomega.HaveKeyWithValue("reroll.dev/config-hash", "abc"))
	g.Expect(got.Generation).To(gomega.Equal(obj.Generation + 1))
	// What the caller gets back: the server's metadata.
	g.Expect(desired.ResourceVersion).To(gomega.Equal(got.ResourceVersion))
	g.Expect(desired.ResourceVersion).NotTo(gomega.Equal(obj.ResourceVersion))
	g.Expect(desired.Generation).To(gomega.Equal(got.Generation))
	g.Expect(desired.UID).To(gomega.Equal(got.UID))
	g.Expect(desired.Annotations).To(gomega.Equal(got.Annotations))
	g.Expect(desired.ManagedFields).To(gomega.HaveLen(len(got.ManagedFields)))
	// From an answer of the metadata alone.
	types := responses.seen()
	g.Expect(types).NotTo(gomega.BeEmpty())
	g.Expect(types[len(types)-1]).To(gomega.ContainSubstring("PartialObjectMetadata"), "the PATCH's answer was the whole object")

	// A write from the stale copy: a conflict, as before.
	stale := obj.DeepCopy()
	workload.SetAnnotation(stale, "reroll.dev/observed", "{}")
	stale.Spec.Template.Annotations = map[string]string{"reroll.dev/config-hash": "def"}
	err = workload.Patch(t.Context(), clients, &obj, stale)
	g.Expect(apierrors.IsConflict(err)).To(gomega.BeTrue(), "want a conflict, got %v", err)
}

// TestWorkloadReconciler_RolloutPatchesAnswerMetadataOnly runs Reroll on a
// Deployment: its record on first sight and its rollout are PATCHes
// answered with PartialObjectMetadata (the controller wires the metadata
// client), and the rollout is what a user sees: one Rolled Event, the
// trigger in the pod template, the record; no further PATCH follows (the
// watch event of the rollout's own write, known by the resourceVersion
// the answer carried, needs no write).
func TestWorkloadReconciler_RolloutPatchesAnswerMetadataOnly(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	responses := &patchResponses{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { responses.next = rt; return responses })
	startRerollAs(t, cfg, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	before := rolledAfterSync(t, d)

	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))
	g.Expect(before.Generation).To(gomega.BeNumerically(">=", 2), "the trigger changed the pod template")
	answers := responses.seen()
	g.Expect(answers).To(gomega.HaveLen(2), "the record on first sight and the rollout")
	for _, a := range answers {
		g.Expect(a).To(gomega.ContainSubstring("PartialObjectMetadata"), "a PATCH's answer was the whole object")
	}
	g.Consistently(responses.seen).Should(gomega.HaveLen(2))
}
