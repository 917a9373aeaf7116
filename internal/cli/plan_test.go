package cli

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reroll/reroll/internal/controller"
)

// planManifests changes key a of ConfigMap cfg (b stays), key p of Secret
// sec (q stays), ConfigMap ignored, which carries reroll.dev/ignore, and
// only a label of ConfigMap labelled.
const planManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "2"
  b: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: sec
stringData:
  p: new-password
  q: same
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
  annotations:
    reroll.dev/ignore: "true"
data:
  x: "2"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: labelled
  labels:
    team: payments
data:
  k: v
`

func TestPlan_PredictsExactlyTheWorkloadsThatRollWhenApplied(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1", "b": "1"}),
		secret(ns, "sec", map[string]string{"p": "old-password", "q": "same"}),
		configMap(ns, "ignored", map[string]string{"reroll.dev/ignore": "true"}, map[string]string{"x": "1"}),
		configMap(ns, "labelled", nil, map[string]string{"k": "v"}),
	)
	workloads := map[string]client.Object{
		// Reads key a, which changes: rolls.
		"Deployment/env-a": deployment(ns, "env-a", autoOn, pod(container(envKey("ConfigMap", "cfg", "a")))),
		// Reads key b only, which stays: does not roll.
		"Deployment/env-b": deployment(ns, "env-b", autoOn, pod(container(envKey("ConfigMap", "cfg", "b")))),
		// Reads every key of cfg: rolls.
		"Deployment/envfrom": deployment(ns, "envfrom", autoOn, pod(container(envFromConfigMap("cfg")))),
		// Reads the Secret's key p, which changes: rolls.
		"Deployment/secret-p": deployment(ns, "secret-p", autoOn, pod(container(envKey("Secret", "sec", "p")))),
		// Reads the Secret's key q, which stays: does not roll.
		"Deployment/secret-q": deployment(ns, "secret-q", autoOn, pod(container(envKey("Secret", "sec", "q")))),
		// Reads an ignored ConfigMap: does not roll.
		"Deployment/ignored": deployment(ns, "ignored", autoOn, pod(container(envFromConfigMap("ignored")))),
		// Excludes cfg: does not roll.
		"Deployment/excluded": deployment(ns, "excluded", map[string]string{"reroll.dev/auto": "true", "reroll.dev/exclude-configmaps": "cfg"}, pod(container(envFromConfigMap("cfg")))),
		// Lists cfg without reading it: rolls.
		"Deployment/listed": deployment(ns, "listed", map[string]string{"reroll.dev/configmaps": "cfg"}, pod(container())),
		// Reloader's dialect, key a: rolls.
		"StatefulSet/sts": statefulSet(ns, "sts", reloaderAutoOn, pod(container(envKey("ConfigMap", "cfg", "a")))),
		// Reads labelled, whose data stays: does not roll.
		"Deployment/label-only": deployment(ns, "label-only", autoOn, pod(container(envFromConfigMap("labelled")))),
		// pod-reloader's dialect lists labelled: any write rolls, a new
		// label too.
		"Deployment/podreloader": deployment(ns, "podreloader", map[string]string{"pod-reloader.cs.sap.com/configmaps": "labelled"}, pod(container())),
	}
	// Not opted in: not rolled by Reroll, so not recorded either.
	notOpted := deployment(ns, "not-opted", nil, pod(container(envFromConfigMap("cfg"))))
	create(t, notOpted)
	for _, w := range workloads {
		create(t, w)
	}
	startReroll(t, ns, controller.Options{}, nil)
	recorded(t, slicesOf(workloads)...)

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(planManifests), 0o600)).To(gomega.Succeed())
	out, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var plan planReport
	g.Expect(json.Unmarshal([]byte(out), &plan)).To(gomega.Succeed())
	g.Expect(out).NotTo(gomega.ContainSubstring("new-password"))
	predicted := map[string][]changeObject{}
	for _, w := range plan.Workloads {
		if w.Rolls {
			predicted[w.Workload] = w.Changes
		}
	}
	g.Expect(predicted).To(gomega.Equal(map[string][]changeObject{
		"Deployment/env-a":       {{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}},
		"Deployment/envfrom":     {{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}},
		"Deployment/secret-p":    {{Kind: "Secret", Name: "sec", Keys: []string{"p"}}},
		"Deployment/listed":      {{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}},
		"StatefulSet/sts":        {{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}},
		"Deployment/podreloader": {{Kind: "ConfigMap", Name: "labelled", Written: true}},
	}))
	g.Expect(plan.Summary).To(gomega.Equal(planSummary{Workloads: 6, Namespaces: 1}))
	reasons := map[string]string{}
	for _, w := range plan.Workloads {
		reasons[w.Workload] = w.Reason
	}
	g.Expect(reasons).To(gomega.HaveKeyWithValue("Deployment/ignored", "ConfigMap/ignored: object has the ignore annotation"))
	g.Expect(reasons).To(gomega.HaveKeyWithValue("Deployment/excluded", "ConfigMap/cfg: excluded by the workload's exclude list"))
	g.Expect(reasons).To(gomega.HaveKeyWithValue("Deployment/not-opted", "not opted in"))
	g.Expect(reasons).To(gomega.HaveKeyWithValue("Deployment/env-b", "ConfigMap/cfg: no key it reads changes"))
	g.Expect(reasons).To(gomega.HaveKeyWithValue("Deployment/label-only", "ConfigMap/labelled: no key it reads changes"))

	// The same manifests through a kustomization (-k) give the same plan.
	kdir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(kdir, "config.yaml"), []byte(planManifests), 0o600)).To(gomega.Succeed())
	g.Expect(os.WriteFile(filepath.Join(kdir, "kustomization.yaml"), []byte("resources:\n  - config.yaml\n"), 0o600)).To(gomega.Succeed())
	kout, err := kubectlReroll(t, "-n", ns, "plan", "-k", kdir, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var kplan planReport
	g.Expect(json.Unmarshal([]byte(kout), &kplan)).To(gomega.Succeed())
	g.Expect(kplan.Workloads).To(gomega.Equal(plan.Workloads))

	table, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir, "--fail-on-rollout")
	g.Expect(err).To(gomega.MatchError(ErrWouldRoll))
	g.Expect(ExitCode(err)).To(gomega.Equal(1), "kubectl diff's status for differences")
	g.Expect(table).To(gomega.ContainSubstring("6 workload(s) in 1 namespace(s) would roll"))

	// -o name: the workloads that would roll, as kubectl names them.
	names, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir, "-o", "name")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var wantNames []string
	for id := range predicted {
		kind, name, _ := strings.Cut(id, "/")
		wantNames = append(wantNames, strings.ToLower(kind)+".apps/"+name)
	}
	g.Expect(strings.Split(strings.TrimSpace(names), "\n")).To(gomega.ConsistOf(wantNames))

	before := map[string]map[string]string{}
	for id, w := range workloads {
		before[id] = podTemplateAnnotations(t, w)
	}
	apply(t, ns, planManifests)
	rolled := func() []string {
		var ids []string
		for id, w := range workloads {
			if !maps.Equal(before[id], podTemplateAnnotations(t, w)) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	want := sortedKeys(predicted)
	g.Eventually(rolled).Should(gomega.Equal(want))
	g.Consistently(rolled).Should(gomega.Equal(want))

	// Applied and rolled: the same manifests would roll nothing now, and
	// --fail-on-rollout exits 0.
	g.Eventually(func() error {
		_, err := kubectlReroll(t, "-n", ns, "plan", "-f", dir, "--fail-on-rollout")
		return err
	}).Should(gomega.Succeed())
}

// apply server-side applies the manifests in ns, as `kubectl apply
// --server-side` does.
func apply(t *testing.T, ns, manifests string) {
	t.Helper()
	g := newT(t)
	for _, doc := range strings.Split(manifests, "\n---\n") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(gomega.Succeed())
		u.SetNamespace(ns)
		//nolint:staticcheck // client.Apply with an Unstructured is the plain form of server-side apply
		g.Expect(k8s.Patch(t.Context(), u, client.Apply, client.ForceOwnership, client.FieldOwner("test"))).To(gomega.Succeed())
	}
}

func slicesOf(m map[string]client.Object) []client.Object {
	out := make([]client.Object, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}
