package controller

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

func init() {
	utilruntime.Must(AddToScheme(scheme))
}

// providerClassStatusCRD installs the SecretProviderClassPodStatus CRD of
// the sigs.k8s.io/secrets-store-csi-driver module in go.mod, read from the
// module cache. There is no CSI driver here: the tests write the statuses
// the driver would.
func providerClassStatusCRD(t *testing.T) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/secrets-store-csi-driver")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding the secrets-store-csi-driver module: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml"))
	if err != nil {
		t.Fatalf("reading the SecretProviderClassPodStatus CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatalf("decoding the SecretProviderClassPodStatus CRD: %v", err)
	}
	installCRD(t, crd)
}

// csiOn are Options with --enable-csi-integration.
func csiOn() Options {
	return Options{PlanOptions: plan.Options{Annotations: annotation.Config{Names: annotation.DefaultNames(), SecretProviderClasses: true}}}
}

// csiVolume mounts SecretProviderClass class in container "app", as the
// Secrets Store CSI Driver's users do.
func csiVolume(class string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "secrets-" + class, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: reference.CSIDriver, ReadOnly: ptrTrue(), VolumeAttributes: map[string]string{reference.CSIProviderClassAttribute: class},
		}}})
		s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "secrets-" + class, MountPath: "/mnt/" + class, ReadOnly: true})
	}
}

func ptrTrue() *bool { b := true; return &b }

// providerClassStatus is what the driver writes for pod in ns after mounting
// class: the ID and version of each object.
func providerClassStatus(ns, pod, class string, versions map[string]string) *csiv1.SecretProviderClassPodStatus {
	s := &csiv1.SecretProviderClassPodStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod + "-" + ns + "-" + class, Labels: map[string]string{csiv1.InternalNodeLabel: "node-1"}},
		Status:     csiv1.SecretProviderClassPodStatusStatus{PodName: pod, SecretProviderClassName: class, Mounted: true, TargetPath: "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/secrets/mount"},
	}
	setVersions(s, versions)
	return s
}

func setVersions(s *csiv1.SecretProviderClassPodStatus, versions map[string]string) {
	s.Status.Objects = nil
	for id, v := range versions {
		s.Status.Objects = append(s.Status.Objects, csiv1.SecretProviderClassObject{ID: id, Version: v})
	}
}

func TestWorkloadReconciler_CSIVersionChangeRolls(t *testing.T) {
	t.Parallel()
	providerClassStatusCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	r := startReroll(t, ns, csiOn())
	status := providerClassStatus(ns, "web-1", "vault-db", map[string]string{"secret/db/password": "1", "secret/db/user": "1"})
	create(t, status)
	rolls := map[string]*appsv1.Deployment{
		// Reloader's typed auto, its generic auto, its list (which needs no
		// volume), and Reroll's typed auto.
		"reloader-typed":   deployment(ns, "reloader-typed", map[string]string{"secretproviderclass.reloader.stakater.com/auto": "true"}, podSpec(csiVolume("vault-db"))),
		"reloader-generic": deployment(ns, "reloader-generic", reloaderAutoOn, podSpec(csiVolume("vault-db"))),
		"reloader-list":    deployment(ns, "reloader-list", map[string]string{"secretproviderclass.reloader.stakater.com/reload": "vault-.*"}, podSpec()),
		"reroll-typed":     deployment(ns, "reroll-typed", map[string]string{annotation.AutoSecretProviderClasses: "true"}, podSpec(csiVolume("vault-db"))),
	}
	stays := map[string]*appsv1.Deployment{
		"other-class":     deployment(ns, "other-class", map[string]string{annotation.AutoSecretProviderClasses: "true"}, podSpec(csiVolume("vault-cache"))),
		"configmaps-only": deployment(ns, "configmaps-only", map[string]string{"configmap.reloader.stakater.com/auto": "true"}, podSpec(csiVolume("vault-db"))),
		"excluded": deployment(ns, "excluded", map[string]string{"reloader.stakater.com/auto": "true",
			"secretproviderclasses.exclude.reloader.stakater.com/reload": "vault-db"}, podSpec(csiVolume("vault-db"))),
	}
	for _, d := range rolls {
		create(t, d)
	}
	for _, d := range stays {
		create(t, d)
	}
	// First sight records the mounted versions and rolls nothing.
	for name, d := range rolls {
		g.Expect(recorded(t, d).Annotations[ObservedAnnotation]).To(gomega.ContainSubstring(`"SecretProviderClass/vault-db":{"secret/db/password":`), name)
		g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.BeEmpty(), name)
	}
	// Memory stays flat: the cache holds the versions and nothing else.
	g.Eventually(func(g gomega.Gomega) {
		cachedStatus := &csiv1.SecretProviderClassPodStatus{}
		g.Expect(r.cache.Get(t.Context(), client.ObjectKeyFromObject(status), cachedStatus)).To(gomega.Succeed())
		g.Expect(cachedStatus.ManagedFields).To(gomega.BeEmpty())
		g.Expect(cachedStatus.Labels).To(gomega.BeEmpty())
		g.Expect(cachedStatus.Status.PodName).To(gomega.BeEmpty())
		g.Expect(cachedStatus.Status.TargetPath).To(gomega.BeEmpty())
		g.Expect(cachedStatus.Status.Objects).To(gomega.HaveLen(2))
	}).Should(gomega.Succeed())

	// A write of the driver that changes no version rolls nothing.
	update(t, status, func(s *csiv1.SecretProviderClassPodStatus) { s.Status.Mounted = false })
	// The driver mounted a new version of one object.
	update(t, status, func(s *csiv1.SecretProviderClassPodStatus) {
		setVersions(s, map[string]string{"secret/db/password": "2", "secret/db/user": "1"})
	})
	for name := range rolls {
		g.Eventually(func() []string { return rolledEvents(t, ns, name) }).Should(gomega.ConsistOf(
			gomega.ContainSubstring("SecretProviderClass/vault-db changed keys secret/db/password")), name)
	}
	g.Expect(get(t, rolls["reloader-generic"]).Spec.Template.Annotations).To(gomega.HaveKeyWithValue("reloader.stakater.com/last-reloaded-from",
		gomega.ContainSubstring(`"type":"SECRETPROVIDERCLASS","name":"vault-db"`)))
	for name, d := range stays {
		g.Expect(rolledEvents(t, ns, name)).To(gomega.BeEmpty(), name)
		g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.BeEmpty(), name)
	}

	// The rollout's new pods mount the new versions and the old pod's status
	// goes: nothing rolls again.
	create(t, providerClassStatus(ns, "web-2", "vault-db", map[string]string{"secret/db/password": "2", "secret/db/user": "1"}))
	g.Expect(k8s.Delete(t.Context(), status)).To(gomega.Succeed())
	g.Consistently(func() int {
		n := 0
		for name := range rolls {
			n += len(rolledEvents(t, ns, name))
		}
		return n
	}).Should(gomega.Equal(len(rolls)))
}

func TestWorkloadReconciler_CSIChangeWhileDownRollsOnce(t *testing.T) {
	t.Parallel()
	providerClassStatusCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	status := providerClassStatus(ns, "web-1", "vault-db", map[string]string{"secret/api-key": "v1"})
	create(t, status)
	d := deployment(ns, "web", map[string]string{"secretproviderclass.reloader.stakater.com/auto": "true"}, podSpec(csiVolume("vault-db")))
	create(t, d)
	// As the binary ships (--defer-record): a workload that mounts a CSI
	// volume still gets its record on first sight, since the first-sight
	// rule cannot see its versions change while no Reroll runs.
	opts := csiOn()
	opts.DeferRecord, opts.Key, opts.InstalledAt = true, testKey(t, 37), time.Now().Add(-time.Minute).Truncate(time.Second)
	first := startReroll(t, ns, opts)
	recorded(t, d)
	first.stop(t)

	update(t, status, func(s *csiv1.SecretProviderClassPodStatus) { setVersions(s, map[string]string{"secret/api-key": "v2"}) })
	startReroll(t, ns, opts)
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.ContainSubstring("SecretProviderClass/vault-db changed keys secret/api-key")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadReconciler_CSIOffIgnoresProviderClasses(t *testing.T) {
	t.Parallel()
	providerClassStatusCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	status := providerClassStatus(ns, "web-1", "vault-db", map[string]string{"secret/api-key": "v1"})
	create(t, status, configMap(ns, "cfg", map[string]string{"a": "1"}))
	d := deployment(ns, "web", reloaderAutoOn, podSpec(csiVolume("vault-db"), envFrom("cfg")))
	create(t, d)
	g.Expect(recorded(t, d).Annotations[ObservedAnnotation]).NotTo(gomega.ContainSubstring("SecretProviderClass"))

	update(t, status, func(s *csiv1.SecretProviderClassPodStatus) { setVersions(s, map[string]string{"secret/api-key": "v2"}) })
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// The ConfigMap change rolls; the CSI change, before it, did not.
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.ContainSubstring("ConfigMap/cfg changed keys a")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
}

func TestWorkloadReconciler_CSIWithoutPermissionIsSkippedOthersWork(t *testing.T) {
	t.Parallel()
	providerClassStatusCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	// What Reroll needs for Deployments, and no read of the CSI statuses:
	// --enable-csi-integration given without the chart's csiIntegration.
	cfg := serviceAccountConfig(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
	opts := csiOn()
	opts.Kinds = []workload.Kind{workload.Deployment{}}
	r := startRerollAs(t, cfg, ns, opts)
	g.Expect(r.logs.String()).To(gomega.ContainSubstring(`missing RBAC permission: list on secretproviderclasspodstatuses`))

	expectDeploymentRolls(t, ns)
}
