package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/trigger"
)

// Without the admission webhook, apply-style syncs keep Reroll's fields
// (docs/gitops.md): server-side apply because they belong to Reroll's field
// manager, client-side apply because its three-way merge removes only what
// the last applied manifest held. Each test applies a manifest, lets Reroll
// roll, then applies the next version of the manifest, which changes a
// label and drops another (the positive control: the apply did write, and
// did remove what it owned), and checks that Reroll's trigger and record are
// still there and nothing rolled again.

// lastApplied is the annotation where `kubectl apply` keeps the manifest it
// applied.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// gitopsManifest is version v of Deployment web reading ConfigMap cfg, as a
// GitOps tool holds it: opted in, with a label "version" and, in version 1
// only, a label "dropped-in-v2".
func gitopsManifest(ns string, v string) *unstructured.Unstructured {
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	d.Labels = map[string]string{"version": v}
	if v == "1" {
		d.Labels["dropped-in-v2"] = "yes"
	}
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		panic(err) // a Deployment always converts
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u
}

// rolledAfterSync waits until Reroll recorded the Deployment, changes cfg,
// waits for the rollout and returns the Deployment as it is then.
func rolledAfterSync(t *testing.T, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	g := newT(t)
	recorded(t, d)
	update(t, configMap(d.Namespace, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, d.Namespace, d.Name) }).Should(gomega.HaveLen(1))
	waitRolledOut(t, d)
	before := get(t, d.DeepCopy())
	g.Expect(before.Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Expect(before.Annotations).To(gomega.HaveKey(ObservedAnnotation))
	return before
}

// expectKept checks, after the apply of version 2, that the apply wrote
// (positive control) and that Reroll's fields, and so the pods, are as
// before it.
func expectKept(t *testing.T, d, before *appsv1.Deployment) {
	t.Helper()
	g := newT(t)
	after := get(t, d.DeepCopy())
	g.Expect(after.Labels).To(gomega.HaveKeyWithValue("version", "2"), "the apply wrote")
	g.Expect(after.Labels).NotTo(gomega.HaveKey("dropped-in-v2"), "the apply removed the field it no longer sets")
	g.Expect(after.Spec.Template.Annotations).To(gomega.HaveKeyWithValue(trigger.ConfigHashAnnotation, before.Spec.Template.Annotations[trigger.ConfigHashAnnotation]))
	g.Expect(after.Annotations).To(gomega.HaveKeyWithValue(ObservedAnnotation, before.Annotations[ObservedAnnotation]))
	rs := len(replicaSets(t, d.Namespace, d.Name))
	g.Consistently(func() int { return len(replicaSets(t, d.Namespace, d.Name)) }).Should(gomega.Equal(rs))
	g.Expect(rolledEvents(t, d.Namespace, d.Name)).To(gomega.HaveLen(1))
}

func TestWorkloadReconciler_ServerSideApplyWithoutWebhookKeepsFields(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	// As Flux does: every sync is a server-side apply by one field manager.
	apply := func(v string) {
		t.Helper()
		g.Expect(k8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(gitopsManifest(ns, v)),
			client.FieldOwner("gitops"), client.ForceOwnership)).To(gomega.Succeed())
	}
	apply("1")
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = ns, "web"
	before := rolledAfterSync(t, d)

	apply("2")
	expectKept(t, d, before)
}

func TestWorkloadReconciler_ClientSideApplyWithoutWebhookKeepsFields(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	// manifest is version v with the last-applied annotation `kubectl
	// apply` adds: the manifest itself.
	manifest := func(v string) []byte {
		u := gitopsManifest(ns, v)
		b, err := json.Marshal(u.Object)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		u.SetAnnotations(map[string]string{"reroll.dev/auto": "true", lastApplied: string(b)})
		b, err = json.Marshal(u.Object)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return b
	}
	// The first apply creates the object.
	first := &unstructured.Unstructured{}
	g.Expect(first.UnmarshalJSON(manifest("1"))).To(gomega.Succeed())
	g.Expect(k8s.Create(t.Context(), first, client.FieldOwner("kubectl-client-side-apply"))).To(gomega.Succeed())
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = ns, "web"
	before := rolledAfterSync(t, d)

	// The second apply, as kubectl computes it: a three-way strategic merge
	// of the last applied manifest (on the live object), the new manifest
	// and the live object.
	live := get(t, d.DeepCopy())
	current, err := json.Marshal(live)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	meta, err := strategicpatch.NewPatchMetaFromStruct(&appsv1.Deployment{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(live.Annotations[lastApplied]), manifest("2"), current, meta, true)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(k8s.Patch(t.Context(), live, client.RawPatch(types.StrategicMergePatchType, patch), client.FieldOwner("kubectl-client-side-apply"))).To(gomega.Succeed())
	expectKept(t, d, before)
}

// request is one request of Reroll's to the Deployment under test and the
// status code it got.
type request struct {
	method string
	code   int
}

// concurrentWriter wraps Reroll's transport: the first PATCH of the
// Deployment after arm is preceded by write, another client's write of the
// same Deployment, so that Reroll's patch is made from a copy that is now
// stale. It records Reroll's requests to that Deployment.
type concurrentWriter struct {
	// path is the Deployment's URL path.
	path  string
	write func() error

	mu       sync.Mutex
	armed    bool
	writeErr error
	requests []request
	// epoch counts the calls of arm: a request sent before the latest one
	// (a first-sight record whose answer is still on its way) is not
	// recorded.
	epoch int
}

func (w *concurrentWriter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path != w.path {
			return rt.RoundTrip(req)
		}
		w.mu.Lock()
		if w.armed && req.Method == http.MethodPatch {
			w.armed = false
			w.writeErr = w.write()
		}
		epoch := w.epoch
		w.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		code := 0
		if err == nil {
			code = resp.StatusCode
		}
		w.mu.Lock()
		if epoch == w.epoch {
			w.requests = append(w.requests, request{req.Method, code})
		}
		w.mu.Unlock()
		return resp, err
	})
}

func (w *concurrentWriter) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.requests = true, nil
	w.epoch++
}

func (w *concurrentWriter) seen() ([]request, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]request(nil), w.requests...), w.writeErr
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestWorkloadReconciler_ConflictingWriteIsRetried: another client writes
// the Deployment between Reroll's read and its patch of the pod template.
// The patch is guarded by the resourceVersion Reroll read, so it conflicts
// instead of writing over a copy it never saw; Reroll reads the Deployment
// again from the API server and patches again, keeping the other write.
func TestWorkloadReconciler_ConflictingWriteIsRetried(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	w := &concurrentWriter{
		path: "/apis/apps/v1/namespaces/" + ns + "/deployments/web",
		write: func() error {
			// The admin client, not Reroll's transport; the Deployment
			// controller writes the status meanwhile.
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var cur appsv1.Deployment
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), &cur); err != nil {
					return err
				}
				cur.Labels = map[string]string{"other-writer": "was-here"}
				return k8s.Update(context.Background(), &cur)
			})
		},
	}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(w.wrap)
	startRerollAs(t, cfg, ns, Options{})
	recorded(t, d)

	w.arm()
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	// The first patch conflicted; after each conflict the Deployment was
	// read again from the API server (the cache may be behind) before the
	// next patch; one patch went through. (The Deployment controller's
	// status writes may add conflicts of their own on a loaded machine.)
	g.Eventually(func(g gomega.Gomega) {
		requests, err := w.seen()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "the concurrent write")
		g.Expect(len(requests)).To(gomega.BeNumerically(">=", 3))
		g.Expect(requests[0]).To(gomega.Equal(request{http.MethodPatch, http.StatusConflict}), "the injected write made the first patch conflict")
		g.Expect(requests[len(requests)-1]).To(gomega.Equal(request{http.MethodPatch, http.StatusOK}))
		for i, r := range requests[:len(requests)-1] {
			if r.code == http.StatusConflict {
				g.Expect(requests[i+1]).To(gomega.Equal(request{http.MethodGet, http.StatusOK}), "a fresh read after conflict %d", i)
			}
		}
		g.Expect(requests).To(gomega.HaveEach(gomega.Or(
			gomega.Equal(request{http.MethodPatch, http.StatusConflict}), gomega.Equal(request{http.MethodGet, http.StatusOK}),
			gomega.Equal(request{http.MethodPatch, http.StatusOK}))))
	}).Should(gomega.Succeed())
	ok := 0
	requests, _ := w.seen()
	for _, r := range requests {
		if r == (request{http.MethodPatch, http.StatusOK}) {
			ok++
		}
	}
	g.Expect(ok).To(gomega.Equal(1), "one patch went through: %v", requests)
	cur := get(t, d)
	g.Expect(cur.Labels).To(gomega.HaveKeyWithValue("other-writer", "was-here"), "the other write is kept")
	g.Expect(cur.Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Expect(eventsWithReason(t, ns, "web", ReasonRollFailed)).To(gomega.BeEmpty())
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	// The record holds the new value's digest: `printf 2 | sha256sum`, 16
	// characters.
	g.Expect(cur.Annotations).To(gomega.HaveKeyWithValue(ObservedAnnotation, `{"ConfigMap/cfg":{"a":"d4735e3a265e16ee"}}`))
}
