package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/webhook"
	"github.com/reroll/reroll/internal/workload"
)

// BenchmarkWorkloadAdmission_Replace measures the webhook's answer to a
// replace of a Deployment with 3 containers of 20 env vars each that dropped
// Reroll's fields: decoding both objects, restoring the fields and encoding
// the JSON patch. It makes no API call. Run with
// `go test -run '^$' -bench WorkloadAdmission ./internal/controller/`;
// ns/op is the time the API server waits for Reroll, beyond the network.
func BenchmarkWorkloadAdmission_Replace(b *testing.B) {
	spec := podSpec(envFrom("cfg"))
	for i := range 3 {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "registry.example/app:1"}
		for j := range 20 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: "value"})
		}
		spec.Containers = append(spec.Containers, c)
	}
	manifest := deployment("ns", "web", autoOn, spec)
	stored := manifest.DeepCopy()
	stored.Annotations[ObservedAnnotation] = `{"ConfigMap/cfg":{"*":"0123456789abcdef"}}`
	stored.Labels = map[string]string{ManagedLabel: "true"}
	trigger.SetConfigHash(&stored.Spec.Template, "0123456789abcdef0123456789abcdef")
	raw := func(o any) runtime.RawExtension {
		j, err := json.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		return runtime.RawExtension{Raw: j}
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, Namespace: "ns", Name: "web",
		Object: raw(manifest), OldObject: raw(stored),
	}}
	h := &webhook.WorkloadAdmission{Kind: workload.Deployment{}}
	b.ReportAllocs()
	for b.Loop() {
		resp := h.Handle(b.Context(), req)
		if !resp.Allowed || len(resp.Patches) != 3 {
			b.Fatalf("allowed %v with %d patches, want the record, the label and the trigger back", resp.Allowed, len(resp.Patches))
		}
	}
}

// BenchmarkWorkloadAdmission_LargeReplace measures the webhook's HTTP
// handler, as served, answering the review of a replace of a Deployment of
// 1.5 MiB (3 MiB with its oldObject), the largest the API server sends.
// B/op is what one such write costs the webhook's memory.
func BenchmarkWorkloadAdmission_LargeReplace(b *testing.B) {
	t := &testing.T{}
	body := replaceReview(t, 1536<<10)
	h := (&WorkloadReconciler{Kind: workload.Deployment{}}).admissionHandler()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mutate-deployment", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("answer %d", rec.Code)
		}
	}
}
