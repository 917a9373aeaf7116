package cli

import (
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/controller"
)

func TestWhy_NamesTheKeysOfTheLastRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1", "b": "1", "c": "1"}),
		secret(ns, "sec", map[string]string{"p": "x"}),
	)
	d := deployment(ns, "web", autoOn, pod(container(envFromConfigMap("cfg"), envKey("Secret", "sec", "p"))))
	create(t, d)
	startReroll(t, ns, controller.Options{}, nil)
	recorded(t, d)

	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cfg"}, cm)).To(gomega.Succeed())
	cm.Data["a"], cm.Data["c"] = "2", "2"
	g.Expect(k8s.Update(t.Context(), cm)).To(gomega.Succeed())

	var r whyReport
	// why reads the workload, then its Events: a rollout made in between
	// shows its Event without its trigger, so wait for both.
	g.Eventually(func(g gomega.Gomega) {
		out, err := kubectlReroll(t, "-n", ns, "why", "deploy/web", "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		r = whyReport{}
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		g.Expect(r.Rollouts).To(gomega.HaveLen(1))
		g.Expect(r.Trigger).To(gomega.HaveLen(1))
	}).Should(gomega.Succeed())
	g.Expect(r.Rollouts[0].Reason).To(gomega.Equal(controller.ReasonRolled))
	g.Expect(r.Rollouts[0].Changes).To(gomega.Equal([]changeObject{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a", "c"}}}))
	g.Expect(r.Record).To(gomega.Equal([]recordEntry{
		{Object: "ConfigMap/cfg", Exists: true, Keys: []string{"a", "b", "c"}},
		{Object: "Secret/sec", Exists: true, Keys: []string{"p"}},
	}))
	g.Expect(r.Trigger).To(gomega.HaveLen(1))
	g.Expect(r.Trigger[0].Name).To(gomega.Equal("reroll.dev/config-hash"))
	g.Expect(r.Blocks).To(gomega.BeEmpty())
	g.Expect(r.Pending).To(gomega.BeEmpty())

	table, err := kubectlReroll(t, "-n", ns, "why", "deployment/web")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.MatchRegexp(`Rolled +ConfigMap/cfg +a,c +Rolled after ConfigMap/cfg changed keys a,c`))
	g.Expect(table).To(gomega.ContainSubstring("Blocked:   nothing"))
}

func TestWhy_SaysWhatBlocksTheWorkload(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"reroll.dev/ignore": "true"}, map[string]string{"a": "1"}))
	d := deployment(ns, "web", map[string]string{"reroll.dev/auto": "true", "reroll.dev/search": "maybe"}, pod(container(envFromConfigMap("cfg"))))
	d.Spec.Paused = true
	create(t, d)
	startReroll(t, ns, controller.Options{}, nil)
	recorded(t, d)

	out, err := kubectlReroll(t, "-n", ns, "why", "deployment/web", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r whyReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	g.Expect(r.Blocks).To(gomega.ConsistOf(
		`invalid annotation: annotation reroll.dev/search: value "maybe" is not a boolean (want "true" or "false")`,
		"spec.paused is true (not paused by Reroll): the Deployment rolls nothing until someone resumes it",
		"ConfigMap/cfg: object has the ignore annotation",
	))
}
