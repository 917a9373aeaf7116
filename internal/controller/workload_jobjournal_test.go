package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// failingJobCreates makes the manager's client fail every create of a Job,
// as a quota, an admission webhook or an API server outage would, and
// signals on created each attempt.
func failingJobCreates(attempted chan<- struct{}) func(*ctrl.Options) {
	return func(mo *ctrl.Options) {
		mo.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*batchv1.Job); ok {
						select {
						case attempted <- struct{}{}:
						default:
						}
						return errors.New("injected: exceeded quota")
					}
					return c.Create(ctx, obj, opts...)
				},
			}), nil
		}
	}
}

func TestWorkloadReconciler_JobIsNeverLost(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	journal := types.NamespacedName{Namespace: ns, Name: "reroll-job-journal"}
	opts := Options{Kinds: batchKinds, JobJournal: journal}
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	running := job(ns, "running", autoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"reroll-test": "no-such-node"}
	}))
	create(t, running)
	oldUID := get(t, running).UID

	// The first Reroll deletes the Job and then cannot create it again; it
	// is stopped in between.
	attempted := make(chan struct{}, 1)
	first := startRerollWith(t, plane.Config, ns, opts, failingJobCreates(attempted))
	recorded(t, running)
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(attempted).Should(gomega.Receive())
	first.stop(t)
	g.Expect(apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(running), &batchv1.Job{}))).To(gomega.BeTrue(), "the Job is gone")
	_, saved := storedEntry(t, journal, client.ObjectKeyFromObject(running))
	g.Expect(saved).To(gomega.BeTrue(), "its manifest is in the journal")

	// The next Reroll brings it back, once, with the new record.
	startReroll(t, ns, opts)
	var back batchv1.Job
	g.Eventually(func() error { return k8s.Get(t.Context(), client.ObjectKeyFromObject(running), &back) }).Should(gomega.Succeed())
	g.Expect(back.UID).NotTo(gomega.Equal(oldUID))
	g.Expect(back.Spec.Template.Spec.Containers[0].EnvFrom).To(gomega.Equal(running.Spec.Template.Spec.Containers[0].EnvFrom))
	g.Expect(back.Annotations[ObservedAnnotation]).To(gomega.ContainSubstring(`"ConfigMap/cfg":{"a":"d4735e3a265e16ee"}`))
	g.Eventually(func() bool {
		_, saved := storedEntry(t, journal, client.ObjectKeyFromObject(running))
		return saved
	}).Should(gomega.BeFalse(), "the entry goes once the Job is back")
	g.Consistently(func() types.UID { return get(t, running).UID }).Should(gomega.Equal(back.UID), "exactly once")
	g.Eventually(func() int32 { return get(t, running).Status.Active }).Should(gomega.Equal(int32(1)))
}
