package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rt "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// replaceReview returns the AdmissionReview of a replace of a Deployment
// whose one env value holds pad bytes and that dropped Reroll's fields.
func replaceReview(t *testing.T, pad int) []byte {
	t.Helper()
	spec := podSpec(envFrom("cfg"))
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "BIG", Value: strings.Repeat("v", pad)}}
	manifest := deployment("ns", "web", autoOn, spec)
	stored := manifest.DeepCopy()
	stored.Annotations[ObservedAnnotation] = `{"ConfigMap/cfg":{"*":"0123456789abcdef"}}`
	stored.Labels = map[string]string{ManagedLabel: "true"}
	trigger.SetConfigHash(&stored.Spec.Template, "0123456789abcdef0123456789abcdef")
	raw := func(o any) rt.RawExtension {
		j, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return rt.RawExtension{Raw: j}
	}
	ar := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
		UID: types.UID(fmt.Sprintf("uid-%d", pad)), Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Operation: admissionv1.Update, Namespace: "ns", Name: "web",
		Object: raw(manifest), OldObject: raw(stored),
	}}
	ar.APIVersion, ar.Kind = "admission.k8s.io/v1", "AdmissionReview"
	b, err := json.Marshal(ar)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The third security review (M6): the workload webhook decoded and
// marshalled a review of up to 3 MiB four times (70-150 MB) before any size
// check. A review over the bound is now admitted unchanged, with a warning,
// before anything decodes it; one within it is still answered with the
// fields restored.
func TestWorkloadAdmission_LargeReviewIsAdmittedBeforeDecoding(t *testing.T) {
	h := (&WorkloadReconciler{Kind: workload.Deployment{}}).admissionHandler()
	answer := func(body []byte) (admissionv1.AdmissionResponse, uint64) {
		req := httptest.NewRequest(http.MethodPost, "/mutate-deployment", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h.ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		var ar admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &ar); err != nil || ar.Response == nil {
			t.Fatalf("answer %q is not an AdmissionReview: %v", rec.Body.String(), err)
		}
		return *ar.Response, after.TotalAlloc - before.TotalAlloc
	}

	// Positive control: a 100 KiB replace gets Reroll's fields back, and
	// the measurement sees its decoding.
	small, grew := answer(replaceReview(t, 100<<10))
	if !small.Allowed || small.UID != "uid-102400" || len(small.Patch) == 0 {
		t.Fatalf("100 KiB replace: allowed %v, uid %q, %d bytes of patch; want the fields restored", small.Allowed, small.UID, len(small.Patch))
	}
	if grew < 1<<20 {
		t.Fatalf("decoding a 100 KiB review allocated %d bytes: the measurement sees nothing", grew)
	}

	large, grew := answer(replaceReview(t, 1536<<10))
	if !large.Allowed || large.UID != "uid-1572864" || len(large.Patch) != 0 {
		t.Fatalf("3 MiB replace: allowed %v, uid %q, %d bytes of patch; want admitted unchanged", large.Allowed, large.UID, len(large.Patch))
	}
	if w := strings.Join(large.Warnings, " "); !strings.Contains(w, "over the limit of 1048576 bytes; admitted unchanged") {
		t.Errorf("warnings %q should say why", w)
	}
	if grew > 1<<20 {
		t.Errorf("answering a 3 MiB review allocated %d bytes, want under 1 MiB", grew)
	}
}
