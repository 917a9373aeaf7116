package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/controller"
)

// whoUsesFixture creates ConfigMap cfg (keys a, b, c) and Secret sec (key
// p), and the workloads that read them in every way, then runs Reroll
// until they are recorded.
func whoUsesFixture(t *testing.T, ns string) {
	t.Helper()
	create(t,
		configMap(ns, "cfg", nil, map[string]string{"a": "1", "b": "1", "c": "1"}),
		secret(ns, "sec", map[string]string{"p": "x"}),
	)
	files := pod(container(func(c *corev1.Container) {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "some", MountPath: "/some"}, {Name: "all", MountPath: "/all"}}
	}))
	files.Volumes = []corev1.Volume{
		{Name: "some", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "b", Path: "b"}}}}},
		{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}},
	}
	opted := []*appsv1.Deployment{
		deployment(ns, "env", autoOn, pod(container(envKey("ConfigMap", "cfg", "a"), envKey("Secret", "sec", "p")))),
		deployment(ns, "files", autoOn, files),
		deployment(ns, "listed", map[string]string{"reroll.dev/configmaps": "cfg"}, pod(container())),
	}
	create(t, deployment(ns, "quiet", nil, pod(container(envFromConfigMap("cfg")))))
	for _, d := range opted {
		create(t, d)
	}
	startReroll(t, ns, controller.Options{}, nil)
	for _, d := range opted {
		recorded(t, d)
	}
}

func TestWhoUses_ListsEveryConsumerWithItsReferencesAndKeys(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	whoUsesFixture(t, ns)

	out, err := kubectlReroll(t, "-n", ns, "who-uses", "configmap/cfg", "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var r whoUsesReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
	byName := map[string]consumer{}
	for _, c := range r.Consumers {
		byName[c.Workload] = c
	}
	g.Expect(byName).To(gomega.HaveLen(4))
	g.Expect(byName["Deployment/env"]).To(gomega.Equal(consumer{
		Workload: "Deployment/env", Namespace: ns, OptedIn: true, Dialect: "reroll",
		References: []referenceUse{{Via: "env", Container: "app", Keys: []string{"a"}}},
		Keys: []keyDecision{
			{Key: "a", Consumed: true, Exists: true, Rolls: "yes"},
			{Key: "b", Exists: true, Rolls: "no"},
			{Key: "c", Exists: true, Rolls: "no"},
		},
		Rolls: "yes", Rule: "auto",
	}))
	g.Expect(byName["Deployment/files"].References).To(gomega.Equal([]referenceUse{
		{Via: "volume", Container: "some", Keys: []string{"b"}},
		{Via: "projected", Container: "all"},
	}))
	g.Expect(byName["Deployment/files"].AllKeys).To(gomega.BeTrue())
	g.Expect(byName["Deployment/listed"].References).To(gomega.Equal([]referenceUse{{Via: "listed"}}))
	g.Expect(byName["Deployment/listed"].Rule).To(gomega.Equal("named by the workload's list"))
	g.Expect(byName["Deployment/quiet"].Rolls).To(gomega.Equal("no"))
	g.Expect(byName["Deployment/quiet"].Rule).To(gomega.Equal("not opted in"))

	table, err := kubectlReroll(t, "-n", ns, "who-uses", "cm/cfg", "-o", "wide")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(table).To(gomega.MatchRegexp(`Deployment/env +reroll +env\(app\) +a +yes +auto +a +b,c`))
}

// TestPlugin_UserWithoutGetSecrets runs the plugin as a user who may read
// workloads, ConfigMaps and Events but not Secrets: every ConfigMap answer
// is complete, and for Secrets the plugin says what it could not read.
func TestPlugin_UserWithoutGetSecrets(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	whoUsesFixture(t, ns)
	create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "events"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}, Verbs: []string{"get", "list"}},
			// Projections too (the projection test of this package may have
			// installed their CRD): only Secrets are withheld.
			{APIGroups: []string{"reroll.dev"}, Resources: []string{"projections"}, Verbs: []string{"get", "list"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "viewer"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}},
		},
	)
	asAlice := []string{"--as", "alice", "-n", ns}

	// ConfigMaps: the same answer as the admin's.
	out, err := kubectlReroll(t, append(asAlice, "who-uses", "configmap/cfg", "-o", "json")...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var cm whoUsesReport
	g.Expect(json.Unmarshal([]byte(out), &cm)).To(gomega.Succeed())
	g.Expect(cm.Consumers).To(gomega.HaveLen(4))
	g.Expect(cm.Notes).To(gomega.BeEmpty())
	for _, c := range cm.Consumers {
		if c.Workload == "Deployment/env" {
			g.Expect(c.Rolls).To(gomega.Equal("yes"))
			g.Expect(c.Keys).To(gomega.HaveLen(3))
		}
	}

	// Secrets: the consumer is found, whether it rolls is unknown, and
	// the plugin says why.
	out, err = kubectlReroll(t, append(asAlice, "who-uses", "secret/sec", "-o", "json")...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var sec whoUsesReport
	g.Expect(json.Unmarshal([]byte(out), &sec)).To(gomega.Succeed())
	g.Expect(sec.Consumers).To(gomega.HaveLen(1))
	g.Expect(sec.Consumers[0].Workload).To(gomega.Equal("Deployment/env"))
	g.Expect(sec.Consumers[0].Rolls).To(gomega.Equal("unknown"))
	g.Expect(sec.Consumers[0].Keys).To(gomega.Equal([]keyDecision{{Key: "p", Consumed: true, Rolls: "unknown"}}))
	g.Expect(sec.Notes).To(gomega.ConsistOf(gomega.ContainSubstring("could not read Secret/sec in " + ns + " (forbidden)")))

	// plan: the ConfigMap's answer is exact; the Secret it could not read
	// is named.
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  b: \"2\"\n  c: \"1\"\n"), 0o600)).To(gomega.Succeed())
	out, err = kubectlReroll(t, append(asAlice, "plan", "-f", dir, "-o", "json")...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var plan planReport
	g.Expect(json.Unmarshal([]byte(out), &plan)).To(gomega.Succeed())
	rolls := map[string]bool{}
	for _, w := range plan.Workloads {
		rolls[w.Workload] = w.Rolls
	}
	g.Expect(rolls).To(gomega.Equal(map[string]bool{
		"Deployment/env": false, "Deployment/files": true, "Deployment/listed": true, "Deployment/quiet": false,
	}))
	for _, w := range plan.Workloads {
		if w.Workload == "Deployment/env" {
			g.Expect(w.Reason).To(gomega.Equal("ConfigMap/cfg: no key it reads changes; could not read Secret/sec (counted as recorded)"))
		}
	}
}
