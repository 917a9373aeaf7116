package controller

import (
	"maps"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/reroll/reroll/internal/metrics"
)

// startCountedReroll runs Reroll like startReroll, with every API request it
// makes (cache, writes and Events) counted by the returned counter.
func startCountedReroll(t *testing.T, ns string, opts Options) *metrics.RequestCounter {
	t.Helper()
	counter := metrics.NewRequestCounter()
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(counter.Wrap)
	startRerollAs(t, cfg, ns, opts)
	return counter
}

// settled waits until counter has counted nothing new for a second, so that
// the reconciles of earlier events are over.
func settled(t *testing.T, counter *metrics.RequestCounter) map[metrics.Request]int64 {
	t.Helper()
	var last map[metrics.Request]int64
	newT(t).Eventually(func() bool {
		now := counter.Counts()
		same := last != nil && maps.Equal(now, last)
		last = now
		return same
	}).WithPolling(time.Second).Should(gomega.BeTrue())
	return last
}

// deploymentPatches is how many patches of Deployments succeeded.
func deploymentPatches(counter *metrics.RequestCounter) int64 {
	return counter.Counts()[metrics.Request{Verb: "patch", Resource: "deployments", Code: 200}]
}

func envFromSource(kind, name string) corev1.EnvFromSource {
	ref := corev1.LocalObjectReference{Name: name}
	if kind == "Secret" {
		return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}
	}
	return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}
}

func TestWorkloadReconciler_LabelOnlyChangesMakeNoAPIRequest(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	counter := startCountedReroll(t, ns, Options{})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), secret(ns, "creds", map[string]string{"password": "x"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg")}
		s.Containers[0].Env = []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}
	}))
	create(t, d)
	recorded(t, d)
	before := settled(t, counter)

	for i := range 5 {
		update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) {
			cm.Labels = map[string]string{"touch": string(rune('a' + i))}
		})
		update(t, secret(ns, "creds", nil), func(s *corev1.Secret) {
			s.Annotations = map[string]string{"touch": string(rune('a' + i))}
		})
	}

	// Not one request of any verb, to any resource: the predicate drops the
	// events before the index is even consulted.
	g.Consistently(counter.Counts).Should(gomega.Equal(before))

	// The counter does see Reroll's requests: a data change costs exactly
	// one patch of the workload (and an Event).
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() int64 { return deploymentPatches(counter) }).Should(gomega.Equal(before[metrics.Request{Verb: "patch", Resource: "deployments", Code: 200}] + 1))
	after := settled(t, counter)
	for r, n := range after {
		if r.Verb == "get" || r.Verb == "list" {
			g.Expect(n).To(gomega.Equal(before[r]), "%s %s after a data change", r.Verb, r.Resource)
		}
	}
}

func TestWorkloadReconciler_StormOfChangesRollsOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A window and a max-wait far longer than the burst below takes, even on
	// a loaded machine, so the test does not depend on timing.
	counter := startCountedReroll(t, ns, Options{CoalesceWindow: 20 * time.Second, CoalesceMaxWait: 10 * time.Minute})
	cms := []string{"cfg-a", "cfg-b", "cfg-c"}
	secrets := []string{"creds-a", "creds-b"}
	for _, name := range cms {
		create(t, configMap(ns, name, map[string]string{"k": "0"}))
	}
	for _, name := range secrets {
		create(t, secret(ns, name, map[string]string{"k": "0"}))
	}
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		for _, name := range cms {
			s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, envFromSource("ConfigMap", name))
		}
		for _, name := range secrets {
			s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, envFromSource("Secret", name))
		}
	}))
	create(t, d)
	recorded(t, d)
	patchesBefore := settled(t, counter)[metrics.Request{Verb: "patch", Resource: "deployments", Code: 200}]

	// Every object changes twice.
	for _, v := range []string{"1", "2"} {
		for _, name := range cms {
			update(t, configMap(ns, name, nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = v })
		}
		for _, name := range secrets {
			update(t, secret(ns, name, nil), func(s *corev1.Secret) { s.Data["k"] = []byte(v) })
		}
	}

	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	settled(t, counter)
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(deploymentPatches(counter)).To(gomega.Equal(patchesBefore + 1))
	note := rolledEvents(t, ns, "web")[0]
	for _, name := range cms {
		g.Expect(note).To(gomega.ContainSubstring("ConfigMap/" + name + " changed keys k"))
	}
	for _, name := range secrets {
		g.Expect(note).To(gomega.ContainSubstring("Secret/" + name + " changed keys k"))
	}
}

func TestWorkloadReconciler_CoalesceWindowZeroRollsEachChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{CoalesceWindow: 0})
	create(t, configMap(ns, "cfg", map[string]string{"mode": "a"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg")}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["mode"] = "b" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["mode"] = "c" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(2))
}

func TestWorkloadReconciler_CoalesceWindowDoesNotDelayWorkloadEvents(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// A window no test would wait for: only the workload's own events can
	// lead to a Reconcile here.
	startReroll(t, ns, Options{CoalesceWindow: time.Hour})
	create(t, configMap(ns, "cfg", map[string]string{"mode": "a"}))
	d := deployment(ns, "web", nil, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg")}
	}))
	create(t, d)

	// Opting in is a change of the workload: recorded at once.
	update(t, d, func(dep *appsv1.Deployment) { dep.Annotations = autoOn })
	g.Eventually(func() map[string]string { return get(t, d).Annotations }).Should(gomega.HaveKey(ObservedAnnotation))
}
