package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestController_DoesNotLinkTheAPIServerLibrary checks that the controller
// links neither k8s.io/apiserver nor what it brings (gRPC, OpenTelemetry,
// the konnectivity client): controller-runtime's metrics filter
// (filters.WithAuthenticationAndAuthorization) linked them all, 15.5 MB of
// the release binary (55.7 → 40.2 MB), where internal/metricsauth's
// ReviewFilter asks the API server the same with client-go. CEL (cel-go, for Validators)
// stays: it needs none of them.
func TestController_DoesNotLinkTheAPIServerLibrary(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	// Positive control: the list is the controller's, with the secure
	// metrics filter and the Validators' CEL.
	for _, want := range []string{"github.com/reroll/reroll/internal/metricsauth", "github.com/reroll/reroll/internal/controller", "github.com/google/cel-go/cel"} {
		if !slices.Contains(deps, want) {
			t.Fatalf("go list -deps does not list %s; got %d packages", want, len(deps))
		}
	}
	var linked []string
	for _, dep := range deps {
		for _, banned := range []string{"k8s.io/apiserver/", "google.golang.org/grpc/", "go.opentelemetry.io/", "sigs.k8s.io/apiserver-network-proxy/"} {
			if strings.HasPrefix(dep+"/", banned) {
				linked = append(linked, dep)
			}
		}
	}
	if len(linked) > 0 {
		t.Errorf("reroll links %d packages of k8s.io/apiserver, gRPC, OpenTelemetry or konnectivity, among them %v", len(linked), linked[:min(len(linked), 8)])
	}
}
