package controller

import (
	"testing"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/workload"
)

// TestWorkloadReconciler_DialectDecidesBatchDefaults runs Reroll with each
// setting of --cronjob-trigger and --recreate-completed-jobs (unset, or given
// either way) over CronJobs and finished Jobs opted in with Reloader's or
// Reroll's annotations, with and without the per-object annotation, and
// checks which of them act on a data change: a Job created from the CronJob,
// a finished Job re-created.
func TestWorkloadReconciler_DialectDecidesBatchDefaults(t *testing.T) {
	t.Parallel()
	type object struct {
		// annotations opt the object in and may carry the per-object choice.
		annotations map[string]string
		// acts is whether the change creates a Job (CronJob) or re-creates
		// the finished Job.
		acts bool
	}
	with := func(base map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for bk, bv := range base {
			out[bk] = bv
		}
		return out
	}
	cases := map[string]struct {
		// cronJobTrigger and recreate are the flags; "" and nil when not given.
		cronJobTrigger string
		recreate       *bool
		// cronJobs and jobs are the objects by name.
		cronJobs, jobs map[string]object
	}{
		"flags unset: the dialect decides, annotations override": {
			cronJobs: map[string]object{
				"reloader":      {annotations: reloaderAutoOn, acts: true},
				"reloader-none": {annotations: with(reloaderAutoOn, workload.CronJobTriggerAnnotation, "none"), acts: false},
				"reroll":        {annotations: autoOn, acts: false},
				"reroll-job":    {annotations: with(autoOn, workload.CronJobTriggerAnnotation, "job"), acts: true},
			},
			jobs: map[string]object{
				"reloader":        {annotations: reloaderAutoOn, acts: true},
				"reloader-keep":   {annotations: with(reloaderAutoOn, workload.RecreateCompletedAnnotation, "false"), acts: false},
				"reroll":          {annotations: autoOn, acts: false},
				"reroll-recreate": {annotations: with(autoOn, workload.RecreateCompletedAnnotation, "true"), acts: true},
			},
		},
		"flags off: both dialects quiet, annotations override": {
			cronJobTrigger: workload.CronJobTriggerNone, recreate: ptr.To(false),
			cronJobs: map[string]object{
				"reloader":     {annotations: reloaderAutoOn, acts: false},
				"reloader-job": {annotations: with(reloaderAutoOn, workload.CronJobTriggerAnnotation, "job"), acts: true},
				"reroll":       {annotations: autoOn, acts: false},
			},
			jobs: map[string]object{
				"reloader":          {annotations: reloaderAutoOn, acts: false},
				"reloader-recreate": {annotations: with(reloaderAutoOn, workload.RecreateCompletedAnnotation, "true"), acts: true},
				"reroll":            {annotations: autoOn, acts: false},
			},
		},
		"flags on: both dialects act, annotations override": {
			cronJobTrigger: workload.CronJobTriggerJob, recreate: ptr.To(true),
			cronJobs: map[string]object{
				"reloader":    {annotations: reloaderAutoOn, acts: true},
				"reroll":      {annotations: autoOn, acts: true},
				"reroll-none": {annotations: with(autoOn, workload.CronJobTriggerAnnotation, "none"), acts: false},
			},
			jobs: map[string]object{
				"reloader":    {annotations: reloaderAutoOn, acts: true},
				"reroll":      {annotations: autoOn, acts: true},
				"reroll-keep": {annotations: with(autoOn, workload.RecreateCompletedAnnotation, "false"), acts: false},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			startReroll(t, ns, Options{Kinds: []workload.Kind{
				workload.CronJob{Trigger: tc.cronJobTrigger}, workload.Job{RecreateCompleted: tc.recreate},
			}})
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
			cronJobs := map[string]*batchv1.CronJob{}
			for n, o := range tc.cronJobs {
				cronJobs[n] = cronJob(ns, "cj-"+n, o.annotations, podSpec(envFrom("cfg")))
				create(t, cronJobs[n])
			}
			jobs := map[string]*batchv1.Job{}
			uids := map[string]types.UID{}
			for n, o := range tc.jobs {
				// kwok completes the pod at once: the Job finishes.
				jobs[n] = job(ns, "job-"+n, o.annotations, podSpec(envFrom("cfg")))
				create(t, jobs[n])
			}
			for n := range tc.cronJobs {
				recorded(t, cronJobs[n])
			}
			for n := range tc.jobs {
				recorded(t, jobs[n])
				g.Eventually(func() int32 { return get(t, jobs[n]).Status.Succeeded }).Should(gomega.Equal(int32(1)))
				uids[n] = jobs[n].UID
			}

			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
			// Positive checks first: every object that acts has acted, and
			// every one that does not has said so in an Event.
			for n, o := range tc.cronJobs {
				uid := get(t, cronJobs[n]).UID
				if o.acts {
					g.Eventually(func() []batchv1.Job { return jobsOwnedBy(t, ns, uid) }).Should(gomega.HaveLen(1), "CronJob %s creates a Job", n)
				} else {
					g.Eventually(func() []string { return eventsWithReason(t, ns, "cj-"+n, ReasonNotRolled) }).Should(gomega.HaveLen(1), "CronJob %s says why it created no Job", n)
				}
			}
			for n, o := range tc.jobs {
				if o.acts {
					g.Eventually(func() types.UID {
						cur := &batchv1.Job{}
						if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(jobs[n]), cur); err != nil {
							return ""
						}
						return cur.UID
					}).ShouldNot(gomega.Or(gomega.Equal(uids[n]), gomega.BeEmpty()), "Job %s is re-created", n)
				} else {
					g.Eventually(func() []string { return eventsWithReason(t, ns, "job-"+n, ReasonNotRolled) }).Should(gomega.ConsistOf(
						gomega.ContainSubstring("the Job has finished")), "Job %s says why it was not re-created", n)
				}
			}
			// Then the negative ones.
			for n, o := range tc.cronJobs {
				if !o.acts {
					g.Expect(jobsOwnedBy(t, ns, get(t, cronJobs[n]).UID)).To(gomega.BeEmpty(), "CronJob %s creates no Job", n)
				}
			}
			for n, o := range tc.jobs {
				if !o.acts {
					g.Expect(get(t, jobs[n]).UID).To(gomega.Equal(uids[n]), "Job %s is kept", n)
				}
			}
		})
	}
}
