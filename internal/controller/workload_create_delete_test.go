package controller

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/plan"
)

// optionalEnvFrom reads the whole ConfigMap "late", which need not exist.
func optionalEnvFrom(s *corev1.PodSpec) {
	s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "late"}, Optional: ptr.To(true),
	}}}
}

func TestWorkloadReconciler_CreateAndDeleteRollOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// opts are Reroll's flags.
		opts Options
		// wantRolls is the number of rollouts after the object is created
		// and then deleted.
		wantRolls int
	}{
		"off by default":    {opts: Options{}, wantRolls: 0},
		"on create":         {opts: Options{PlanOptions: plan.Options{ReloadOnCreate: true}}, wantRolls: 1},
		"on create, delete": {opts: Options{PlanOptions: plan.Options{ReloadOnCreate: true, ReloadOnDelete: true}}, wantRolls: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			startReroll(t, ns, tc.opts)
			d := deployment(ns, "web", autoOn, podSpec(optionalEnvFrom))
			create(t, d)
			recorded(t, d)

			create(t, configMap(ns, "late", map[string]string{"a": "1"}))
			g.Eventually(func() string { return get(t, d).Annotations[ObservedAnnotation] }).Should(gomega.ContainSubstring(`"ConfigMap/late":{"a":`))
			g.Expect(k8s.Delete(t.Context(), configMap(ns, "late", nil))).To(gomega.Succeed())
			g.Eventually(func() string { return get(t, d).Annotations[ObservedAnnotation] }).Should(gomega.ContainSubstring(`"ConfigMap/late":null`))

			g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(tc.wantRolls))
			g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(tc.wantRolls))
		})
	}
}
