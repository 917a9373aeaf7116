package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
)

// TestPlan_FirstSightFollowsTheInstallationTime checks that plan and why
// predict the controller's first-sight rule for a workload Reroll has not
// recorded yet: a change after the workload's creation and after Reroll's
// installation (the installation ConfigMap's installed-at, which the
// controller writes with state.PublishInstalledAt) rolls it;
// with an installation after the change, nothing rolls. The prediction is
// then checked against the controller, started after the apply. No digest
// key Secret exists: the plugin needs none (the third review, M8: reading
// its installed-at needed get on the key Secret, whose readers can sign
// Reroll's state).
func TestPlan_FirstSightFollowsTheInstallationTime(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, sys := newNamespace(t), newNamespace(t)
	// Installed an hour ago, or to be installed in an hour: the change
	// below is after the first and before the second.
	installed := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	for name, at := range map[string]time.Time{"installed-before": installed, "installed-after": time.Now().Add(time.Hour)} {
		g.Expect(state.PublishInstalledAt(t.Context(), k8s, types.NamespacedName{Namespace: sys, Name: name}, at)).To(gomega.Succeed())
	}
	var secrets corev1.SecretList
	g.Expect(k8s.List(t.Context(), &secrets, client.InNamespace(sys))).To(gomega.Succeed())
	g.Expect(secrets.Items).To(gomega.BeEmpty(), "no digest key Secret to read")

	cfg := configMap(ns, "cfg", nil, map[string]string{"a": "1"})
	create(t, cfg)
	// Not recorded: no Reroll runs yet.
	fresh := deployment(ns, "fresh", autoOn, pod(container(envKey("ConfigMap", "cfg", "a"))))
	create(t, fresh)

	dir := t.TempDir()
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"2\"\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte(manifest), 0o600)).To(gomega.Succeed())
	predict := func(secret string) planWorkload {
		out, err := kubectlReroll(t, "-n", ns, "--installation", sys+"/"+secret, "plan", "-f", dir, "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r planReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		g.Expect(r.Workloads).To(gomega.HaveLen(1))
		return r.Workloads[0]
	}

	// Installed before the change: the apply rolls the workload on first
	// sight.
	w := predict("installed-before")
	g.Expect(w.Workload).To(gomega.Equal("Deployment/fresh"))
	g.Expect(w.Rolls).To(gomega.BeTrue(), "reason: %s", w.Reason)
	g.Expect(w.Changes).To(gomega.ConsistOf(gomega.HaveField("Name", "cfg")))

	// Installed after the change: recorded, not rolled.
	w = predict("installed-after")
	g.Expect(w.Rolls).To(gomega.BeFalse())
	g.Expect(w.Reason).To(gomega.Equal("no record yet: Reroll takes what it sees first as the baseline, without a rollout"))

	// Applied while no Reroll runs, in a later second than the ConfigMap's
	// creation (a change in the same second cannot be told from the
	// creation without a watch: docs/design.md, "First sight"): why shows
	// the change as pending.
	g.Eventually(func() int64 { return time.Now().Unix() }).Should(gomega.BeNumerically(">", cfg.CreationTimestamp.Unix()))
	apply(t, ns, manifest)
	out, err := kubectlReroll(t, "-n", ns, "--installation", sys+"/installed-before", "why", "deployment/fresh", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var why whyReport
	g.Expect(json.Unmarshal([]byte(out), &why)).To(gomega.Succeed())
	g.Expect(why.Pending).To(gomega.ConsistOf(gomega.HaveField("Name", "cfg")))

	// The controller, installed an hour ago, does what plan predicted.
	before := podTemplateAnnotations(t, fresh)
	startReroll(t, ns, controller.Options{PlanOptions: plan.Options{InstalledAt: installed}}, nil)
	recorded(t, fresh)
	g.Eventually(func() map[string]string { return podTemplateAnnotations(t, fresh) }).ShouldNot(gomega.Equal(before))
}
