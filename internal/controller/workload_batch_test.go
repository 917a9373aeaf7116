package controller

import (
	"testing"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// batchKinds are the kinds these tests run Reroll with.
var batchKinds = []workload.Kind{workload.Deployment{}, workload.CronJob{Trigger: workload.CronJobTriggerNone}, workload.Job{}}

func cronJob(ns, name string, annotations map[string]string, spec corev1.PodSpec) *batchv1.CronJob {
	spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: batchv1.CronJobSpec{
			// Once a year: never during a test.
			Schedule: "0 0 1 1 *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: spec},
			}},
		},
	}
}

func job(ns, name string, annotations map[string]string, spec corev1.PodSpec) *batchv1.Job {
	spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}},
	}
}

// jobsOwnedBy returns the Jobs whose controller is the CronJob with uid.
func jobsOwnedBy(t *testing.T, ns string, uid types.UID) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == uid {
			out = append(out, j)
		}
	}
	return out
}

func TestWorkloadReconciler_CronJob(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{Kinds: batchKinds})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	quiet := cronJob(ns, "quiet", autoOn, podSpec(envFrom("cfg")))
	instant := cronJob(ns, "instant", map[string]string{"reroll.dev/auto": "true", workload.CronJobTriggerAnnotation: "job"}, podSpec(envFrom("cfg")))
	optedOut := cronJob(ns, "opted-out", map[string]string{"reroll.dev/auto": "false"}, podSpec(envFrom("cfg")))
	create(t, quiet, instant, optedOut)
	recorded(t, quiet)
	recorded(t, instant)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"only": "labels"} })
	g.Consistently(func() []batchv1.Job { return jobsOwnedBy(t, ns, get(t, instant).UID) }).Should(gomega.BeEmpty())

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// By default a CronJob is not rolled, and the Event says why.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "quiet", ReasonNotRolled) }).Should(gomega.ConsistOf(
		gomega.ContainSubstring("the CronJob's next scheduled Job reads the new data")))
	g.Expect(jobsOwnedBy(t, ns, get(t, quiet).UID)).To(gomega.BeEmpty())
	// With the job trigger, a Job is created from the jobTemplate, as
	// `kubectl create job --from=cronjob` does, and the Job controller runs it.
	g.Eventually(func() []batchv1.Job { return jobsOwnedBy(t, ns, get(t, instant).UID) }).Should(gomega.HaveLen(1))
	j := jobsOwnedBy(t, ns, get(t, instant).UID)[0]
	g.Expect(j.Annotations).To(gomega.HaveKeyWithValue("cronjob.kubernetes.io/instantiate", "manual"))
	g.Expect(j.Spec.Template.Spec.Containers[0].EnvFrom).To(gomega.Equal(instant.Spec.JobTemplate.Spec.Template.Spec.Containers[0].EnvFrom))
	g.Eventually(func() int32 { return get(t, &j).Status.Succeeded }).Should(gomega.Equal(int32(1)))
	g.Eventually(func() []string { return rolledEvents(t, ns, "instant") }).Should(gomega.ConsistOf(gomega.ContainSubstring("created Job " + j.Name)))
	// The CronJob's own template is unchanged, and the Job it owns is not
	// Reroll's to roll.
	g.Expect(get(t, instant).Spec.JobTemplate.Spec.Template.Annotations).To(gomega.BeEmpty())
	g.Expect(get(t, &j).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
	g.Expect(get(t, optedOut).Annotations).NotTo(gomega.HaveKey(ObservedAnnotation))
}

func TestWorkloadReconciler_JobIsRecreated(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{Kinds: batchKinds})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	// No node matches: the pod stays Pending and the Job keeps running.
	running := job(ns, "running", autoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"reroll-test": "no-such-node"}
	}))
	// kwok completes this one's pod at once.
	finished := job(ns, "finished", autoOn, podSpec(envFrom("cfg")))
	create(t, running, finished)
	recorded(t, running)
	recorded(t, finished)
	oldUID := get(t, running).UID
	g.Eventually(func() int32 { return get(t, finished).Status.Succeeded }).Should(gomega.Equal(int32(1)))

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"only": "labels"} })
	g.Consistently(func() types.UID { return get(t, running).UID }).Should(gomega.Equal(oldUID))

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	// A new Job of the same name, with the same pod spec and Reroll's record,
	// and the Job controller runs it.
	g.Eventually(func() types.UID {
		cur := &batchv1.Job{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(running), cur); err != nil {
			return ""
		}
		return cur.UID
	}).ShouldNot(gomega.Or(gomega.Equal(oldUID), gomega.BeEmpty()))
	fresh := get(t, running)
	g.Expect(fresh.Spec.Template.Spec.Containers[0].EnvFrom).To(gomega.Equal(running.Spec.Template.Spec.Containers[0].EnvFrom))
	g.Expect(fresh.Annotations[ObservedAnnotation]).To(gomega.ContainSubstring(`"ConfigMap/cfg":{"a":"d4735e3a265e16ee"}`))
	g.Eventually(func() int32 { return get(t, fresh).Status.Active }).Should(gomega.Equal(int32(1)))
	g.Eventually(func() []string { return rolledEvents(t, ns, "running") }).Should(gomega.ConsistOf(gomega.ContainSubstring("re-created the Job")))
	// A finished Job is not run again.
	g.Eventually(func() []string { return eventsWithReason(t, ns, "finished", ReasonNotRolled) }).Should(gomega.ConsistOf(gomega.ContainSubstring("the Job has finished")))
	g.Expect(get(t, finished).Status.Succeeded).To(gomega.Equal(int32(1)))
}

// The third security review (H2): the re-create cleared the selector even
// of a Job with manualSelector: true, so the API server refused the new Job
// after the old one was deleted, and the Job was lost. A manualSelector Job
// keeps its own selector and labels, and is re-created like any other; the
// plain Job beside it is the positive control.
func TestWorkloadReconciler_ManualSelectorJobIsRecreated(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{Kinds: batchKinds, PlanOptions: plan.Options{Key: testKey(t, 32)},
		JobJournal: types.NamespacedName{Namespace: ns, Name: "reroll-job-journal"}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	pending := func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"reroll-test": "no-such-node"} }
	plain := job(ns, "plain", reloaderAutoOn, podSpec(envFrom("cfg"), pending))
	manual := job(ns, "manual", reloaderAutoOn, podSpec(envFrom("cfg"), pending))
	manual.Spec.ManualSelector = ptr.To(true)
	manual.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "manual"}}
	manual.Spec.Template.Labels = map[string]string{"batch": "manual"}
	create(t, plain, manual)
	recorded(t, plain)
	recorded(t, manual)
	oldUIDs := map[string]types.UID{"plain": get(t, plain).UID, "manual": get(t, manual).UID}

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	for _, j := range []*batchv1.Job{plain, manual} {
		g.Eventually(func() types.UID {
			cur := &batchv1.Job{}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(j), cur); err != nil {
				return ""
			}
			return cur.UID
		}).ShouldNot(gomega.Or(gomega.Equal(oldUIDs[j.Name]), gomega.BeEmpty()), "Job %s is re-created", j.Name)
		g.Eventually(func() []string { return rolledEvents(t, ns, j.Name) }).Should(gomega.ConsistOf(gomega.ContainSubstring("re-created the Job")))
	}
	fresh := get(t, manual)
	g.Expect(fresh.Spec.ManualSelector).To(gomega.Equal(ptr.To(true)))
	g.Expect(fresh.Spec.Selector.MatchLabels).To(gomega.Equal(map[string]string{"batch": "manual"}))
	g.Expect(fresh.Spec.Template.Labels).To(gomega.HaveKeyWithValue("batch", "manual"))
	g.Eventually(func() int32 { return get(t, fresh).Status.Active }).Should(gomega.Equal(int32(1)))
}
