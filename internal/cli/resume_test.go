package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	haltrecords "github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/scope"
)

// TestResume_ContinuesTheHaltedChangeSetOfAMember: status lists a halted
// set with its held workload and wave; resume, named by the held workload
// or by the changed ConfigMap, writes the resumed halt record that the
// controller reads, and a set no longer halted cannot be resumed again.
func TestResume_ContinuesTheHaltedChangeSetOfAMember(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, app := newNamespace(t), newNamespace(t)
	halted := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	halt := func(objects ...string) delivery.Halt {
		return delivery.Halt{Halted: halted, Failed: []string{"Deployment/canary/web"}, Signal: "Deployment/canary/web: kstatus Failed: Progress deadline exceeded", Objects: objects}
	}
	// Signed as Reroll signs them, under an installation key the plugin
	// never reads.
	key, err := digest.NewKey(bytes.Repeat([]byte{30}, digest.MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	record := func(id string, h delivery.Halt) *corev1.ConfigMap {
		return haltrecords.ConfigMap(key, own, "reroll-change-sets", id, h)
	}
	records := []client.Object{record("set-a", halt("ConfigMap/"+app+"/cfg")), record("set-b", halt("Secret/"+app+"/creds"))}
	held := deployment(app, "web", map[string]string{
		"reroll.dev/auto":         "true",
		delivery.MemberAnnotation: delivery.Record{Sets: []string{"set-a"}, Wave: 2}.String(),
		plan.PendingAnnotation:    halted.Format(time.RFC3339) + " " + delivery.HoldHalted,
	}, pod(container(envFromConfigMap("cfg"))))
	create(t, append(records, held)...)

	out, err := kubectlReroll(t, "-n", app, "status", "--reroll-namespace", own, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r statusReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	g.Expect(r.HaltedChangeSets).To(gomega.HaveLen(2))
	g.Expect(r.HaltedChangeSets[0].ID).To(gomega.Equal("set-a"))
	g.Expect(r.HaltedChangeSets[0].Held).To(gomega.Equal([]string{"Deployment/" + app + "/web"}))
	g.Expect(r.HaltedChangeSets[0].Waves).To(gomega.Equal([]int{2}))
	g.Expect(r.HaltedChangeSets[0].HeldAt).To(gomega.Equal([]string{"wave 2"}))
	g.Expect(r.HaltedChangeSets[0].NamespaceWaves).To(gomega.Equal([]int{0}))
	g.Expect(r.HaltedChangeSets[0].Failed).To(gomega.Equal([]string{"Deployment/canary/web"}))
	g.Expect(r.HaltedChangeSets[0].Record).To(gomega.Equal(own + "/reroll-change-sets-set-a"))
	g.Expect(r.HaltedChangeSets[0].Unsigned).To(gomega.BeFalse())
	g.Expect(r.HaltedChangeSets[1].Objects).To(gomega.Equal([]string{"Secret/" + app + "/creds"}))
	table, err := kubectlReroll(t, "-n", app, "status", "--reroll-namespace", own)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("set-a halted 2026-01-01T12:00:00Z"))
	g.Expect(table).To(gomega.ContainSubstring("record:  " + own + "/reroll-change-sets-set-a\n"))
	g.Expect(table).To(gomega.ContainSubstring("Deployment/" + app + "/web (wave 2)"))

	// A tenant writes set-a, whose record names only app's objects and the
	// canary, on a workload of its own namespace, and asks for a resume:
	// the record does not name that namespace, nothing is resumed.
	tenant := newNamespace(t)
	create(t, deployment(tenant, "web", map[string]string{
		"reroll.dev/auto":         "true",
		delivery.MemberAnnotation: delivery.Record{Sets: []string{"set-a", "set-b"}}.String(),
	}, pod(container(envFromConfigMap("cfg")))))
	_, err = kubectlReroll(t, "-n", tenant, "resume", "deployment/web", "--reroll-namespace", own)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("in no halted change set")))
	readHalt := func(id string) *delivery.Halt {
		var cm corev1.ConfigMap
		g.Expect(k8s.Get(t.Context(), types.NamespacedName{Namespace: own, Name: haltrecords.Name("reroll-change-sets", id)}, &cm)).To(gomega.Succeed())
		// As the controller reads it: signed by Reroll, with the resume
		// the plugin wrote beside it.
		h, err := haltrecords.Verify(key, &cm)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return h
	}
	g.Expect(readHalt("set-a").Active()).To(gomega.BeTrue(), "the forged annotation resumed nothing")

	out, err = kubectlReroll(t, "-n", app, "resume", "deployment/web", "--reroll-namespace", own)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).To(gomega.Equal("Resumed change set set-a\n"))
	a := readHalt("set-a")
	g.Expect(a.Active()).To(gomega.BeFalse())
	g.Expect(a.Resumed).To(gomega.BeTemporally(">", halted))
	b := readHalt("set-b")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(b.Active()).To(gomega.BeTrue(), "the other set stays halted")

	_, err = kubectlReroll(t, "-n", app, "resume", "deployment/web", "--reroll-namespace", own)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("in no halted change set")))

	out, err = kubectlReroll(t, "-n", app, "resume", "secret/creds", "--reroll-namespace", own)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).To(gomega.Equal("Resumed change set set-b\n"))
	out, err = kubectlReroll(t, "-n", app, "status", "--reroll-namespace", own, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	r = statusReport{}
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	g.Expect(r.HaltedChangeSets).To(gomega.BeEmpty())

	// A record written by hand, unsigned, is shown as one Reroll ignores;
	// an older Reroll's one ConfigMap of halt records gets a note.
	unsigned := record("set-u", halt("ConfigMap/"+app+"/cfg"))
	delete(unsigned.Data, haltrecords.SignatureKey)
	create(t, unsigned, configMap(own, "reroll-change-sets", nil, map[string]string{"0123456789abcdef": halt().String()}))
	out, err = kubectlReroll(t, "-n", app, "status", "--reroll-namespace", own, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	r = statusReport{}
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	g.Expect(r.HaltedChangeSets).To(gomega.HaveLen(1))
	g.Expect(r.HaltedChangeSets[0].Unsigned).To(gomega.BeTrue())
	g.Expect(r.Notes).To(gomega.ContainElement(gomega.ContainSubstring("holds the halt records of an older Reroll (1 set(s))")))
	table, err = kubectlReroll(t, "-n", app, "status", "--reroll-namespace", own)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.ContainSubstring("not signed by Reroll: it holds nothing"))
}

// TestPlan_ShowsTheWaves: plan names each workload's wave, its own or its
// Namespace's.
func TestPlan_ShowsTheWaves(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	var n corev1.Namespace
	g.Expect(k8s.Get(t.Context(), types.NamespacedName{Name: ns}, &n)).To(gomega.Succeed())
	n.Annotations = map[string]string{delivery.WaveAnnotation: "-1"}
	g.Expect(k8s.Update(t.Context(), &n)).To(gomega.Succeed())
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1"}),
		deployment(ns, "canary", map[string]string{"reroll.dev/auto": "true"}, pod(container(envFromConfigMap("cfg")))),
		deployment(ns, "late", map[string]string{"reroll.dev/auto": "true", delivery.WaveAnnotation: "3"}, pod(container(envFromConfigMap("cfg")))),
	)
	// A namespace without a wave: its change sets stay its own.
	other := newNamespace(t)
	create(t,
		configMap(other, "cfg", nil, map[string]string{"a": "1"}),
		deployment(other, "web", map[string]string{"reroll.dev/auto": "true"}, pod(container(envFromConfigMap("cfg")))),
	)
	startReroll(t, ns, controller.Options{Scope: scope.Scope{Namespaces: []string{ns, other}}}, nil)
	recorded(t, deployment(ns, "canary", nil, corev1.PodSpec{}), deployment(ns, "late", nil, corev1.PodSpec{}), deployment(other, "web", nil, corev1.PodSpec{}))

	dir := t.TempDir()
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: " + ns + "\ndata:\n  a: \"2\"\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: " + other + "\ndata:\n  a: \"2\"\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte(manifest), 0o600)).To(gomega.Succeed())
	out, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r planReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	// Each workload's place: its Namespace's wave ("-" for a Namespace
	// without one), then its own.
	waves := map[string]string{}
	for _, w := range r.Workloads {
		g.Expect(w.Rolls).To(gomega.BeTrue(), w.Workload)
		place := "-"
		if w.NamespaceWave != nil {
			place = strconv.Itoa(*w.NamespaceWave)
		}
		waves[w.Namespace+"/"+w.Workload] = place + " " + strconv.Itoa(w.Wave)
	}
	g.Expect(waves).To(gomega.Equal(map[string]string{ns + "/Deployment/canary": "-1 0", ns + "/Deployment/late": "-1 3", other + "/Deployment/web": "- 0"}))
	table, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.MatchRegexp(`NS-WAVE\s+WAVE`))
	g.Expect(table).To(gomega.MatchRegexp(`(?m)^` + other + `\s+Deployment/web\s+yes\s+-\s+0\s`))
	g.Expect(table).To(gomega.MatchRegexp(`(?m)^` + ns + `\s+Deployment/late\s+yes\s+-1\s+3\s`))
}
