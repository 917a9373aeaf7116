package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/scope"
)

// versionedOn opts a workload in with Reroll's annotation and pins it.
var versionedOn = map[string]string{"reroll.dev/auto": "true", pin.VersionedAnnotation: "true"}

// configVolume mounts ConfigMap name as volume "config" in container "app".
func configVolume(name string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
		s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: "/etc/config"})
	}
}

// copiesOf lists the copies of ConfigMap source in ns, by name.
func copiesOf(t *testing.T, ns, source string) map[string]corev1.ConfigMap {
	t.Helper()
	var list corev1.ConfigMapList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{pin.LabelCopyOf: source})).To(gomega.Succeed())
	out := map[string]corev1.ConfigMap{}
	for _, c := range list.Items {
		out[c.Name] = c
	}
	return out
}

// copyName is the name of the copy of ConfigMap ns/source holding data,
// under key.
func copyName(key digest.Key, ns, source string, data map[string]string) string {
	d, _ := key.Of(configMap(ns, source, data))
	return pin.Name(key, reference.ConfigMap, ns, source, d.Keys)
}

// templateNames returns the ConfigMaps a Deployment's pod template names.
func templateNames(t *corev1.PodTemplateSpec) []string {
	cms, _ := pin.Referenced(&t.Spec)
	return cms
}

// podsNaming returns, for each running pod of the Deployment's label, the
// ConfigMaps it names.
func podsNaming(t *testing.T, ns, name string) [][]string {
	t.Helper()
	var list corev1.PodList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels(labelsFor(name)))).To(gomega.Succeed())
	var out [][]string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		cms, _ := pin.Referenced(&p.Spec)
		// The service account token's projected volume names the root CA.
		out = append(out, slices.DeleteFunc(cms, func(n string) bool { return n == "kube-root-ca.crt" }))
	}
	return out
}

// TestWorkloadReconciler_VersionedPinsEachContent: a versioned Deployment
// whose ConfigMap changes twice has three copies, one per content, each
// holding the bytes the source held then; its ReplicaSets name them, its
// pods the current one; the source itself is never written.
func TestWorkloadReconciler_VersionedPinsEachContent(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 7)
	contents := []map[string]string{{"color": "blue"}, {"color": "green"}, {"color": "red\n\x00binary-ish"}}
	src := configMap(ns, "app-config", contents[0])
	create(t, src)
	// A workload not versioned, beside it: the positive control's opposite.
	plain := deployment(ns, "plain", autoOn, podSpec(envFrom("app-config")))
	d := deployment(ns, "web", versionedOn, podSpec(envFrom("app-config"), configVolume("app-config")))
	create(t, d, plain)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})

	// First sight pins: the template names the copy of the first content,
	// through envFrom and the volume, so that the first undo restores it.
	want := []string{copyName(key, ns, "app-config", contents[0])}
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal(want))
	g.Expect(get(t, d).Spec.Template.Spec.Volumes[0].ConfigMap.Name).To(gomega.Equal(want[0]))
	// The Event is recorded after the write, asynchronously.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "web", plan.ReasonPinned) }).Should(gomega.HaveLen(1))
	waitRolledOut(t, d)

	for i, c := range contents[1:] {
		update(t, src, func(cm *corev1.ConfigMap) { cm.Data = c })
		want = append(want, copyName(key, ns, "app-config", c))
		g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal(want[i+1:i+2]), "change %d", i+1)
		waitRolledOut(t, d)
		g.Eventually(func() [][]string { return podsNaming(t, ns, "web") }).Should(gomega.HaveEach(want[i+1 : i+2]))
	}

	copies := copiesOf(t, ns, "app-config")
	g.Expect(slices.Sorted(maps.Keys(copies))).To(gomega.ConsistOf(want))
	for i, name := range want {
		c := copies[name]
		g.Expect(c.Data).To(gomega.Equal(contents[i]), "copy %s holds content %d", name, i)
		g.Expect(*c.Immutable).To(gomega.BeTrue())
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(pin.AnnotationCopyOf, "app-config"))
		_, err := pin.Verify(key, reference.ConfigMap, &c)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		// No owners: one copy serves every workload that shares its
		// content; the garbage collection (internal/pingc) collects it.
		g.Expect(c.OwnerReferences).To(gomega.BeEmpty())
	}
	// Each ReplicaSet (what a pod of an old revision starts from) names the
	// copy of its revision's content: revision 1 is the Deployment as
	// created, on the source; the first sight's pin made revision 2.
	named := map[string]string{}
	for _, rs := range replicaSets(t, ns, "web") {
		names := templateNames(&rs.Spec.Template)
		g.Expect(names).To(gomega.HaveLen(1))
		named[rs.Annotations["deployment.kubernetes.io/revision"]] = names[0]
	}
	g.Expect(named).To(gomega.Equal(map[string]string{"1": "app-config", "2": want[0], "3": want[1], "4": want[2]}))
	// The source is Git's or the secret store's: never written.
	g.Expect(get(t, src).Data).To(gomega.Equal(contents[2]))
	// The workload not versioned still names the source, and rolled.
	g.Expect(templateNames(&get(t, plain).Spec.Template)).To(gomega.Equal([]string{"app-config"}))
	g.Expect(rolledEvents(t, ns, "plain")).To(gomega.HaveLen(2))
}

// undo does what `kubectl rollout undo deployment/NAME --to-revision=N`
// does: the Deployment's template becomes revision N's ReplicaSet's,
// without its pod-template-hash label.
func undo(t *testing.T, d *appsv1.Deployment, revision int) {
	t.Helper()
	var template *corev1.PodTemplateSpec
	for _, rs := range replicaSets(t, d.Namespace, d.Name) {
		if rs.Annotations["deployment.kubernetes.io/revision"] == strconv.Itoa(revision) {
			template = rs.Spec.Template.DeepCopy()
		}
	}
	newT(t).Expect(template).NotTo(gomega.BeNil(), "revision %d", revision)
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template = *template })
}

// TestWorkloadReconciler_UndoRestoresTheOlderCopy: kubectl rollout undo of a
// versioned Deployment brings the older copy back, and Reroll keeps it (no
// roll forward) until the source changes again, then rolls once.
func TestWorkloadReconciler_UndoRestoresTheOlderCopy(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 7)
	src := configMap(ns, "app-config", map[string]string{"color": "blue"})
	create(t, src)
	d := deployment(ns, "web", versionedOn, podSpec(envFrom("app-config")))
	create(t, d)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
	blue := copyName(key, ns, "app-config", map[string]string{"color": "blue"})
	green := copyName(key, ns, "app-config", map[string]string{"color": "green"})
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{blue}))
	waitRolledOut(t, d)
	update(t, src, func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"color": "green"} })
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{green}))
	waitRolledOut(t, d)
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))

	// The bad green goes back to blue, by the user's choice (revision 1 is
	// the Deployment as created, before the first sight's pin).
	undo(t, d, 2)
	g.Eventually(func() [][]string { return podsNaming(t, ns, "web") }).Should(gomega.HaveEach([]string{blue}))
	waitRolledOut(t, d)
	// Kept: no roll forward to green, no revert recorded, for as long as
	// the source stays green.
	g.Consistently(func() []string { return templateNames(&get(t, d).Spec.Template) }, "5s").Should(gomega.Equal([]string{blue}))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, ns, "web", plan.ReasonTemplateReverted)).To(gomega.BeEmpty())
	g.Expect(copiesOf(t, ns, "app-config")[blue].Data).To(gomega.Equal(map[string]string{"color": "blue"}))

	// The source changes again: one rollout, to the new content.
	update(t, src, func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"color": "yellow"} })
	yellow := copyName(key, ns, "app-config", map[string]string{"color": "yellow"})
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{yellow}))
	waitRolledOut(t, d)
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
}

// TestWorkloadReconciler_FailedCanaryUndoesItself: with safe delivery, a
// versioned canary whose rollout fails (a ResourceQuota refuses its surge
// pod, so the Deployment controller reports ProgressDeadlineExceeded) is
// undone to its previous pinned revision with a RolledBack Event, the
// change set halts, and production never rolls.
func TestWorkloadReconciler_FailedCanaryUndoesItself(t *testing.T) {
	t.Parallel()
	g := newT(t)
	own, canaryNS, prodNS := newNamespace(t), waveNamespace(t, "-1"), waveNamespace(t, "0")
	for _, ns := range []string{canaryNS, prodNS} {
		update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
			n.Annotations[pin.VersionedAnnotation] = "true"
		})
	}
	ds := replicated(t, map[string]string{"level": "info"}, canaryNS, prodNS)
	canary, prod := ds[0], ds[1]
	opts := deliveryOptions(t, own, own, canaryNS, prodNS)
	startReroll(t, own, opts)
	key := opts.Key
	info := map[string]string{"level": "info"}
	for _, d := range ds {
		g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{copyName(key, d.Namespace, "cfg", info)}))
		waitRolledOut(t, d)
	}
	update(t, canary, func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](5) })
	waitRolledOut(t, canary)
	blockSurge(t, canaryNS)
	prodTemplate := get(t, prod).Spec.Template

	bad := map[string]string{"level": "bad"}
	replicate(t, bad, canaryNS, prodNS)
	// The canary rolls to the copy of the bad content, and fails.
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Expect(copiesOf(t, canaryNS, "cfg")).To(gomega.HaveKey(copyName(key, canaryNS, "cfg", bad)))
	g.Eventually(func() string { return member(t, canary).Failed }).Should(gomega.ContainSubstring("Progress deadline exceeded"))
	// Undone: its template names the copy of the good content again.
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack) }).Should(gomega.HaveLen(1))
	note := eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack)[0]
	g.Expect(note).To(gomega.ContainSubstring(member(t, canary).Sets[0]))
	g.Expect(note).To(gomega.ContainSubstring("Progress deadline exceeded"))
	g.Expect(note).To(gomega.ContainSubstring("ConfigMap/" + copyName(key, canaryNS, "cfg", info)))
	g.Expect(templateNames(&get(t, canary).Spec.Template)).To(gomega.Equal([]string{copyName(key, canaryNS, "cfg", info)}))
	g.Eventually(func() [][]string { return podsNaming(t, canaryNS, "web") }).Should(gomega.HaveEach([]string{copyName(key, canaryNS, "cfg", info)}))
	// The change set halts; production never rolls, and the source keeps
	// the bad content (never written by Reroll).
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Consistently(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.BeEmpty())
	g.Expect(get(t, prod).Spec.Template).To(gomega.Equal(prodTemplate))
	g.Expect(get(t, configMap(canaryNS, "cfg", nil)).Data).To(gomega.Equal(bad))
	g.Expect(eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack)).To(gomega.HaveLen(1), "undone once")
}

// TestWorkloadWebhook_ServerSideApplyKeepsPinnedReferences: a GitOps
// tool's server-side apply of the original manifest, which names the
// source, leaves the pinned references (and the pin annotation) in place:
// no new revision, nothing rolls.
func TestWorkloadWebhook_ServerSideApplyKeepsPinnedReferences(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	opts := Options{PlanOptions: plan.Options{Key: testKey(t, 7)}}
	_, _ = startRerollWithWebhook(t, ns, opts)
	create(t, configMap(ns, "app-config", map[string]string{"color": "blue"}))
	d := deployment(ns, "web", versionedOn, podSpec(envFrom("app-config"), configVolume("app-config")))
	manifest := d.DeepCopy()
	create(t, d)
	blue := copyName(opts.Key, ns, "app-config", map[string]string{"color": "blue"})
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{blue}))
	g.Eventually(func() map[string]string { return get(t, d).Labels }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	waitRolledOut(t, d)
	before := get(t, d.DeepCopy())
	revision := maxRevision(t, ns, "web")
	// The manifest names the source, which a plain apply would write back.
	g.Expect(templateNames(&manifest.Spec.Template)).To(gomega.Equal([]string{"app-config"}))

	manifest.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(manifest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	// A dry run first (what a server-side diff does): no drift.
	dry := u.DeepCopy()
	g.Expect(k8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(dry), client.FieldOwner("gitops"), client.ForceOwnership, client.DryRunAll)).To(gomega.Succeed())
	g.Expect(templateNames(&get(t, d).Spec.Template)).To(gomega.Equal([]string{blue}))
	g.Expect(k8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("gitops"), client.ForceOwnership)).To(gomega.Succeed())

	after := get(t, d.DeepCopy())
	g.Expect(templateNames(&after.Spec.Template)).To(gomega.Equal([]string{blue}))
	g.Expect(after.Spec.Template.Spec.Volumes[0].ConfigMap.Name).To(gomega.Equal(blue))
	g.Expect(after.Spec.Template.Annotations).To(gomega.HaveKeyWithValue(pin.TemplateAnnotation, before.Spec.Template.Annotations[pin.TemplateAnnotation]))
	g.Consistently(func() int { return maxRevision(t, ns, "web") }).Should(gomega.Equal(revision))
	g.Expect(rolledEvents(t, ns, "web")).To(gomega.BeEmpty())
}

// secretCopiesOf lists the Secrets in ns labelled as copies of source.
func secretCopiesOf(t *testing.T, ns, source string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{pin.LabelCopyOf: source})).To(gomega.Succeed())
	return list.Items
}

// TestWorkloadReconciler_TenantPinsOnlyWhatItsPodsRead: a tenant's
// versioned workload lists, beside the ConfigMap its pods read, a Secret
// of its namespace its pods do not read and a Secret of another namespace
// (Wave's extra lists, with cross-namespace references allowed): all three
// change and the workload rolls, but only the ConfigMap is copied, in the
// tenant's namespace; nothing is copied from, or into, the other one.
func TestWorkloadReconciler_TenantPinsOnlyWhatItsPodsRead(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, victim := newNamespace(t), newNamespace(t)
	key := testKey(t, 7)
	cfg := configMap(ns, "cfg", map[string]string{"a": "1"})
	admin := secret(ns, "admin", map[string]string{"token": "t1"})
	db := secret(victim, "db", map[string]string{"password": "p1"})
	create(t, cfg, admin, db)
	d := deployment(ns, "web", map[string]string{
		"wave.pusher.com/update-on-config-change": "true",
		"wave.pusher.com/extra-secrets":           victim + "/db,admin",
		pin.VersionedAnnotation:                   "true",
	}, podSpec(envFrom("cfg")))
	create(t, d)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key, AllowCrossNamespaceReferences: true}, Scope: scope.Scope{Namespaces: []string{ns, victim}}})
	first := copyName(key, ns, "cfg", map[string]string{"a": "1"})
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{first}))
	waitRolledOut(t, d)

	update(t, cfg, func(c *corev1.ConfigMap) { c.Data = map[string]string{"a": "2"} })
	update(t, admin, func(s *corev1.Secret) { s.StringData = map[string]string{"token": "t2"} })
	update(t, db, func(s *corev1.Secret) { s.StringData = map[string]string{"password": "p2"} })
	// Positive: it rolled, and pinned what its pods read.
	second := copyName(key, ns, "cfg", map[string]string{"a": "2"})
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{second}))
	g.Expect(copiesOf(t, ns, "cfg")).To(gomega.HaveLen(2))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).ShouldNot(gomega.BeEmpty())
	// Negative: no copy of what its pods do not read, none across
	// namespaces.
	g.Consistently(func() int {
		return len(secretCopiesOf(t, ns, "admin")) + len(secretCopiesOf(t, ns, "db")) + len(secretCopiesOf(t, victim, "db")) + len(copiesOf(t, victim, "cfg"))
	}).Should(gomega.BeZero())
	var all corev1.SecretList
	g.Expect(k8s.List(t.Context(), &all, client.InNamespace(victim))).To(gomega.Succeed())
	for _, s := range all.Items {
		g.Expect(s.Annotations).NotTo(gomega.HaveKey(pin.AnnotationCopyOf), "nothing is copied into another namespace")
	}
	_, secrets := pin.Referenced(&get(t, d).Spec.Template.Spec)
	g.Expect(secrets).To(gomega.BeEmpty())
}

// TestWorkloadReconciler_ACopyThatCannotBeMadeRollsUnpinned: a ResourceQuota
// full of ConfigMaps refuses the copy of the changed ConfigMap; the change
// is not lost: the workload rolls onto the source itself with an Unpinned
// Warning Event, while the Secret it reads, whose copy the quota allows, is
// pinned to its new content.
func TestWorkloadReconciler_ACopyThatCannotBeMadeRollsUnpinned(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 7)
	cfg := configMap(ns, "cfg", map[string]string{"a": "1"})
	db := secret(ns, "db", map[string]string{"password": "p1"})
	create(t, cfg, db)
	d := deployment(ns, "web", versionedOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	}))
	create(t, d)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
	// Pinned on first sight, both.
	g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal([]string{copyName(key, ns, "cfg", map[string]string{"a": "1"})}))
	g.Eventually(func() []corev1.Secret { return secretCopiesOf(t, ns, "db") }).Should(gomega.HaveLen(1))
	waitRolledOut(t, d)

	var cms corev1.ConfigMapList
	g.Expect(k8s.List(t.Context(), &cms, client.InNamespace(ns))).To(gomega.Succeed())
	n := resource.MustParse(strconv.Itoa(len(cms.Items)))
	create(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "full"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": n}}})
	g.Eventually(func() corev1.ResourceList {
		return get(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "full"}}).Status.Used
	}).Should(gomega.HaveKeyWithValue(corev1.ResourceName("count/configmaps"), n), "the quota is in force")
	// The positive control of the quota: it refuses a ConfigMap.
	g.Expect(k8s.Create(t.Context(), configMap(ns, "probe", nil))).To(gomega.MatchError(gomega.ContainSubstring("exceeded quota")))

	update(t, cfg, func(c *corev1.ConfigMap) { c.Data = map[string]string{"a": "2"} })
	update(t, db, func(s *corev1.Secret) { s.StringData = map[string]string{"password": "p2"} })
	// Both changes rolled (once or twice, as the two writes came): the
	// Secret is pinned to a new copy, the ConfigMap is read unpinned.
	g.Eventually(func() []corev1.Secret { return secretCopiesOf(t, ns, "db") }).Should(gomega.HaveLen(2))
	g.Eventually(func() bool {
		tmpl := get(t, d).Spec.Template
		_, secrets := pin.Referenced(&tmpl.Spec)
		for _, c := range secretCopiesOf(t, ns, "db") {
			if c.Data["password"] != nil && string(c.Data["password"]) == "p2" && len(secrets) == 1 && secrets[0] == c.Name {
				return true
			}
		}
		return false
	}).Should(gomega.BeTrue(), "the Secret is pinned to the copy of its new content")
	tmpl := get(t, d).Spec.Template
	g.Expect(templateNames(&tmpl)).To(gomega.Equal([]string{"cfg"}), "the ConfigMap rolls unpinned")
	_, secrets := pin.Referenced(&tmpl.Spec)
	g.Expect(secrets[0]).NotTo(gomega.Equal("db"))
	// Told once per rollout that could not copy, not per retry.
	rolled := len(rolledEvents(t, ns, "web"))
	g.Expect(rolled).To(gomega.BeNumerically(">=", 1))
	g.Consistently(func() int { return len(eventsWithReason(t, ns, "web", plan.ReasonUnpinned)) }).Should(gomega.Equal(rolled))
	warnings := eventsWithReason(t, ns, "web", plan.ReasonUnpinned)
	g.Expect(warnings[0]).To(gomega.ContainSubstring("exceeded quota"))
	// No value (the namespace's random name may hold "p2": left out).
	g.Expect(strings.ReplaceAll(warnings[0], ns, "")).NotTo(gomega.ContainSubstring("p2"))
	g.Expect(tmpl.Annotations[pin.TemplateAnnotation]).To(gomega.Equal("Secret/db=" + secrets[0]))
}
