package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPlugin_DoesNotLinkTheReconciler checks that the plugin reads Reroll's
// vocabulary (Event reasons in internal/plan, the field manager in
// internal/workload, annotation names in internal/annotation) without
// linking the reconciler, its caches or its store: a plugin that never
// writes carries none of the controller's code.
func TestPlugin_DoesNotLinkTheReconciler(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	// Positive control: the list is the plugin's, and holds the packages
	// the vocabulary moved to.
	for _, want := range []string{"github.com/reroll/reroll/internal/cli", "github.com/reroll/reroll/internal/plan"} {
		if !slices.Contains(deps, want) {
			t.Fatalf("go list -deps does not list %s; got %d packages", want, len(deps))
		}
	}
	for _, banned := range []string{"github.com/reroll/reroll/internal/controller", "github.com/reroll/reroll/internal/store"} {
		if slices.Contains(deps, banned) {
			t.Errorf("kubectl-reroll links %s", banned)
		}
	}
}
