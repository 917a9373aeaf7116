package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// jobTemplateNames returns the ConfigMaps a CronJob's jobTemplate names.
func jobTemplateNames(t *testing.T, cj *batchv1.CronJob) []string {
	t.Helper()
	return templateNames(&get(t, cj).Spec.JobTemplate.Spec.Template)
}

// TestWorkloadReconciler_VersionedCronJobPinsItsJobTemplate: a versioned
// CronJob's jobTemplate is pinned on first sight and moves to the copy of
// each new content, whether Reroll creates a Job at once (the Job reads
// the new copy) or leaves it to the schedule; a Job started before the
// change keeps the older copy, which pin-gc keeps as long as that Job
// exists and collects once it is gone.
func TestWorkloadReconciler_VersionedCronJobPinsItsJobTemplate(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 43)
	blueData, greenData := map[string]string{"color": "blue"}, map[string]string{"color": "green"}
	src := configMap(ns, "app-config", blueData)
	create(t, src)
	instant := cronJob(ns, "instant", map[string]string{"reroll.dev/auto": "true", "reroll.dev/versioned": "true", workload.CronJobTriggerAnnotation: "job"}, podSpec(envFrom("app-config")))
	scheduled := cronJob(ns, "scheduled", versionedOn, podSpec(envFrom("app-config")))
	plain := cronJob(ns, "plain", autoOn, podSpec(envFrom("app-config")))
	create(t, instant, scheduled, plain)
	// The kinds as cmd/reroll registers them by default.
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}, Kinds: append(workload.Builtin(), workload.CronJob{}, workload.Job{})})
	blue, green := copyName(key, ns, "app-config", blueData), copyName(key, ns, "app-config", greenData)

	// First sight pins both jobTemplates, with no Job created.
	for _, cj := range []*batchv1.CronJob{instant, scheduled} {
		g.Eventually(func() []string { return jobTemplateNames(t, cj) }).Should(gomega.Equal([]string{blue}), cj.Name)
		g.Expect(eventsWithReason(t, ns, cj.Name, plan.ReasonPinned)).To(gomega.ConsistOf(gomega.ContainSubstring("the next Jobs read the copies")))
		g.Expect(jobsOwnedBy(t, ns, get(t, cj).UID)).To(gomega.BeEmpty())
	}
	recorded(t, plain)
	g.Expect(jobTemplateNames(t, plain)).To(gomega.Equal([]string{"app-config"}))
	// A Job the schedule starts now (as the CronJob controller makes it,
	// from the jobTemplate) reads blue.
	g.Expect(workload.CreateJob(t.Context(), k8s, get(t, scheduled), "scheduled-before")).To(gomega.Succeed())
	before := &batchv1.Job{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "scheduled-before"}, before)).To(gomega.Succeed())
	g.Expect(templateNames(&before.Spec.Template)).To(gomega.Equal([]string{blue}))

	update(t, src, func(cm *corev1.ConfigMap) { cm.Data = greenData })
	// The job trigger: a Job made from the jobTemplate pinned in the same
	// write reads green.
	g.Eventually(func() []string { return jobTemplateNames(t, instant) }).Should(gomega.Equal([]string{green}))
	g.Eventually(func() []batchv1.Job { return jobsOwnedBy(t, ns, get(t, instant).UID) }).Should(gomega.HaveLen(1))
	made := jobsOwnedBy(t, ns, get(t, instant).UID)[0]
	g.Expect(templateNames(&made.Spec.Template)).To(gomega.Equal([]string{green}))
	g.Expect(rolledEvents(t, ns, "instant")).To(gomega.ConsistOf(gomega.And(
		gomega.ContainSubstring("created Job "+made.Name), gomega.ContainSubstring("pinned ConfigMap app-config to "+green))))
	// No trigger: no Job, but the next scheduled Jobs read green.
	g.Eventually(func() []string { return jobTemplateNames(t, scheduled) }).Should(gomega.Equal([]string{green}))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "scheduled", ReasonNotRolled) }).Should(gomega.ConsistOf(
		gomega.ContainSubstring("pinned ConfigMap app-config to " + green)))
	g.Expect(jobsOwnedBy(t, ns, get(t, scheduled).UID)).To(gomega.ConsistOf(gomega.HaveField("Name", "scheduled-before")))
	// A CronJob not versioned still names the source.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "plain", ReasonNotRolled) }).Should(gomega.HaveLen(1))
	g.Expect(jobTemplateNames(t, plain)).To(gomega.Equal([]string{"app-config"}))
	copies := copiesOf(t, ns, "app-config")
	g.Expect(slices.Sorted(maps.Keys(copies))).To(gomega.ConsistOf(blue, green))
	g.Expect(copies[blue].Data).To(gomega.Equal(blueData))
	g.Expect(copies[green].Data).To(gomega.Equal(greenData))
	// The Job started before the change keeps blue.
	g.Expect(templateNames(&get(t, before).Spec.Template)).To(gomega.Equal([]string{blue}))

	// pin-gc: a copy nothing names, made after blue, is collected (so blue
	// is past its grace and a pass looked at it); blue, which only the
	// Job started before the change (and its pod) names, stays.
	unused := pinCopy(t, key, configMap(ns, "unused", map[string]string{"k": "1"}), get(t, scheduled))
	g.Eventually(func() bool { return exists(t, unused) }, pinGCWait, time.Second).Should(gomega.BeFalse(),
		"the copy nothing names is collected")
	g.Consistently(func() []string { return slices.Collect(maps.Keys(copiesOf(t, ns, "app-config"))) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.ContainElements(blue, green),
		"the copy a Job names stays")
	// The Job goes (with its pods): blue goes; green, which the
	// jobTemplates and the Job made for green name, stays.
	g.Expect(k8s.Delete(t.Context(), before, client.PropagationPolicy("Background"))).To(gomega.Succeed())
	g.Eventually(func() bool { _, ok := copiesOf(t, ns, "app-config")[blue]; return ok }, pinGCWait, time.Second).Should(gomega.BeFalse(),
		"the copy no Job names any more is collected")
	g.Consistently(func() []string { return slices.Collect(maps.Keys(copiesOf(t, ns, "app-config"))) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.ConsistOf(green))
}

// TestWorkloadWebhook_ServerSideApplyKeepsACronJobsPinnedReferences: with
// the admission webhook, a GitOps tool's server-side apply of a versioned
// CronJob's original manifest, which names the source, leaves the
// jobTemplate's pinned references and pin annotation in place.
func TestWorkloadWebhook_ServerSideApplyKeepsACronJobsPinnedReferences(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	opts := Options{PlanOptions: plan.Options{Key: testKey(t, 44)}, Kinds: append(workload.Builtin(), workload.CronJob{}, workload.Job{})}
	_, _ = startRerollWithWebhook(t, ns, opts)
	create(t, configMap(ns, "app-config", map[string]string{"color": "blue"}))
	cj := cronJob(ns, "nightly", versionedOn, podSpec(envFrom("app-config"), configVolume("app-config")))
	manifest := cj.DeepCopy()
	create(t, cj)
	blue := copyName(opts.Key, ns, "app-config", map[string]string{"color": "blue"})
	g.Eventually(func() []string { return jobTemplateNames(t, cj) }).Should(gomega.Equal([]string{blue}))
	g.Eventually(func() map[string]string { return get(t, cj).Labels }).Should(gomega.HaveKeyWithValue(ManagedLabel, "true"))
	before := get(t, cj.DeepCopy())
	// The manifest names the source, which a plain apply would write back.
	g.Expect(templateNames(&manifest.Spec.JobTemplate.Spec.Template)).To(gomega.Equal([]string{"app-config"}))

	manifest.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("CronJob"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(manifest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "jobTemplate", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "jobTemplate", "spec", "template", "metadata", "creationTimestamp")
	g.Expect(k8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("gitops"), client.ForceOwnership)).To(gomega.Succeed())

	after := get(t, cj.DeepCopy())
	// Positive first: the apply reached the CronJob (the gitops manager
	// owns fields of it now).
	g.Expect(after.ManagedFields).To(gomega.ContainElement(gomega.HaveField("Manager", "gitops")))
	g.Expect(templateNames(&after.Spec.JobTemplate.Spec.Template)).To(gomega.Equal([]string{blue}))
	g.Expect(after.Spec.JobTemplate.Spec.Template.Spec.Volumes[0].ConfigMap.Name).To(gomega.Equal(blue))
	g.Expect(after.Spec.JobTemplate.Spec.Template.Annotations).To(gomega.HaveKeyWithValue(pin.TemplateAnnotation,
		before.Spec.JobTemplate.Spec.Template.Annotations[pin.TemplateAnnotation]))
	g.Consistently(func() []string { return jobTemplateNames(t, cj) }).Should(gomega.Equal([]string{blue}))
	g.Expect(jobsOwnedBy(t, ns, after.UID)).To(gomega.BeEmpty())
}
