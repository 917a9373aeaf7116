package controller

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/reroll/reroll/internal/webhook"
	"github.com/reroll/reroll/internal/workload"
)

// The fuzz targets here need no control plane: TestMain does not start one
// when -test.fuzz is set (run them with -run '^$', as `make fuzz` does).

// FuzzWorkloadAdmission checks the webhook's decode and restore path on
// arbitrary objects: it never panics, always allows the write, and the
// answer to a CREATE holds nothing the request did not (only the managed
// label, see handle).
func FuzzWorkloadAdmission(f *testing.F) {
	d := deployment("ns", "web", autoOn, podSpec(envFrom("cfg")))
	manifest, _ := json.Marshal(d)
	d.Annotations[ObservedAnnotation] = `{"ConfigMap/cfg":{"*":"0123456789abcdef"}}`
	d.Labels = map[string]string{ManagedLabel: "true"}
	stored, _ := json.Marshal(d)
	f.Add(string(admissionv1.Update), manifest, stored)
	f.Add(string(admissionv1.Create), manifest, []byte(nil))
	f.Add(string(admissionv1.Update), []byte(`{"spec":{"template":null}}`), []byte(`{"metadata":{"annotations":{"reroll.dev/observed":"x"}}}`))
	f.Add(string(admissionv1.Delete), []byte(`[]`), []byte(`{`))
	h := &webhook.WorkloadAdmission{Kind: workload.Deployment{}}
	f.Fuzz(func(t *testing.T, op string, object, oldObject []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Operation(op), Namespace: "ns", Name: "web",
			Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: oldObject},
		}}
		resp := h.Handle(t.Context(), req)
		if !resp.Allowed {
			t.Fatalf("denied %s: %v", op, resp.Result)
		}
		if req.Operation == admissionv1.Create {
			for _, p := range resp.Patches {
				if p.Path != "/metadata/labels" && p.Path != "/metadata/labels/reroll.dev~1managed" {
					t.Fatalf("CREATE answer patches %s", p.Path)
				}
			}
		}
	})
}
