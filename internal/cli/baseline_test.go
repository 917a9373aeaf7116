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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/reroll/reroll/internal/baseline"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/state"
)

// TestWhyAndPlan_ReadTheBaselineOfAWorkloadNotRolledYet checks that why
// and plan read the baseline Reroll keeps in its namespace for a workload
// it has not rolled (no record on it: the install writes none) after a key
// the workload does not read changed: why shows that baseline as the record
// and no pending change, and plan predicts, as for a record, a rollout for
// the key the workload reads and none for the other one. Without the
// baselines (--baselines=""), the plugin falls back on the first-sight
// rule, which rolls for any change after the installation: the baseline is
// what made the answer right. The predictions are then checked against the
// controller.
func TestWhyAndPlan_ReadTheBaselineOfAWorkloadNotRolledYet(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, sys := newNamespace(t), newNamespace(t)
	installed := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	g.Expect(state.PublishInstalledAt(t.Context(), k8s, types.NamespacedName{Namespace: sys, Name: "reroll-installation"}, installed)).To(gomega.Succeed())
	cfg := configMap(ns, "cfg", nil, map[string]string{"read": "1", "unread": "1"})
	create(t, cfg)
	web := deployment(ns, "web", autoOn, pod(container(envKey("ConfigMap", "cfg", "read"))))
	create(t, web)
	opts := controller.Options{PlanOptions: plan.Options{InstalledAt: installed, DeferRecord: true},
		Baselines: types.NamespacedName{Namespace: sys, Name: "reroll-baselines"}}
	// Reroll's log, to know when it has looked at web (it writes nothing
	// then, so nothing else in the API says so).
	logs := &syncBuffer{}
	startReroll(t, ns, opts, func(o *ctrl.Options) { o.Logger = zap.New(zap.WriteTo(logs), zap.UseDevMode(true)) })
	g.Eventually(logs.String).Should(gomega.ContainSubstring("Took consumed data as baseline on first sight"))

	// A key web does not read changes, in a later second than the
	// workload's creation: Reroll keeps web's baseline in its namespace
	// and writes nothing on web.
	g.Eventually(func() int64 { return time.Now().Unix() }).Should(gomega.BeNumerically(">", web.CreationTimestamp.Unix()))
	apply(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  read: \"1\"\n  unread: \"2\"\n")
	stored := types.NamespacedName{Namespace: sys, Name: baseline.ConfigMapName("reroll-baselines", ns)}
	g.Eventually(func() map[string]string {
		var cm corev1.ConfigMap
		_ = k8s.Get(t.Context(), stored, &cm)
		return cm.Data
	}).Should(gomega.HaveKey("Deployment.web"))
	g.Expect(get(t, web).GetAnnotations()).NotTo(gomega.HaveKey(plan.RecordAnnotation), "no record on the workload")

	flags := []string{"-n", ns, "--installation", sys + "/reroll-installation", "--baselines", sys + "/reroll-baselines"}
	why := func(extra ...string) whyReport {
		out, err := kubectlReroll(t, append(append(append([]string{}, flags...), extra...), "why", "deployment/web", "-o", "json")...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r whyReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	// Without the baselines: the first-sight rule sees cfg changed after
	// the installation and shows it pending, which Reroll will not roll.
	r := why("--baselines", "")
	g.Expect(r.Baseline).To(gomega.BeEmpty())
	g.Expect(r.Pending).To(gomega.ConsistOf(gomega.HaveField("Name", "cfg")))
	// With them: the baseline is the record, and nothing is pending.
	r = why()
	g.Expect(r.Baseline).To(gomega.Equal(stored.String()))
	g.Expect(r.Record).To(gomega.ConsistOf(recordEntry{Object: "ConfigMap/cfg", Exists: true, Keys: []string{"read"}}))
	g.Expect(r.Pending).To(gomega.BeEmpty())

	dir := t.TempDir()
	predict := func(read, unread string) planWorkload {
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  read: \"" + read + "\"\n  unread: \"" + unread + "\"\n"
		g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte(manifest), 0o600)).To(gomega.Succeed())
		out, err := kubectlReroll(t, append(append([]string{}, flags...), "plan", "-f", dir, "-o", "json")...)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var p planReport
		g.Expect(json.Unmarshal([]byte(out), &p)).To(gomega.Succeed())
		g.Expect(p.Workloads).To(gomega.HaveLen(1))
		return p.Workloads[0]
	}
	g.Expect(predict("1", "3").Rolls).To(gomega.BeFalse(), "another change of the unread key")
	w := predict("2", "2")
	g.Expect(w.Rolls).To(gomega.BeTrue(), "reason: %s", w.Reason)
	g.Expect(w.Changes).To(gomega.ConsistOf(gomega.HaveField("Keys", []string{"read"})))

	// The controller does as predicted: nothing for the unread key, one
	// rollout for the read one.
	before := podTemplateAnnotations(t, web)
	apply(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  read: \"1\"\n  unread: \"3\"\n")
	g.Consistently(func() map[string]string { return podTemplateAnnotations(t, web) }, 3*time.Second).Should(gomega.Equal(before))
	apply(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  read: \"2\"\n  unread: \"3\"\n")
	g.Eventually(func() map[string]string { return podTemplateAnnotations(t, web) }).ShouldNot(gomega.Equal(before))
}

// get reads obj again.
func get(t *testing.T, obj client.Object) client.Object {
	t.Helper()
	out := obj.DeepCopyObject().(client.Object)
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), out)).To(gomega.Succeed())
	return out
}
