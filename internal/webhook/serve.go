package webhook

import (
	"net/http"

	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/reroll/reroll/internal/admissionlimit"
	"github.com/reroll/reroll/internal/workload"
)

// Path returns the path the admission webhook of kind is served on:
// "/mutate-deployment" for the built-in kinds.
func Path(k workload.Kind) string { return "/mutate-" + workload.ControllerName(k) }

// Handler is the HTTP handler of h, the admission webhook of h.Kind. A
// request over admissionlimit.DefaultMaxBytes is admitted unchanged, with
// a warning, before anything decodes it: the reconciler repairs what the
// write dropped, at the cost of one rollout.
func Handler(h *WorkloadAdmission) http.Handler {
	return admissionlimit.Limit(&ctrlwebhook.Admission{Handler: h}, 0, admissionlimit.Allow, "reroll's webhook of "+h.Kind.Name()+"s")
}
