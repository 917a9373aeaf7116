package controller

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/trigger"
)

func TestWorkloadReconciler_RollsDeploymentOnConfigMapChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "app-config", map[string]string{"LOG_LEVEL": "info", "PORT": "8080"}))
	d := deployment(ns, "web", autoOn, podSpec(envFrom("app-config")))
	create(t, d)
	recorded(t, d)
	waitRolledOut(t, d)

	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })

	g.Eventually(func() map[string]string { return get(t, d).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.ConsistOf(gomega.And(
		gomega.ContainSubstring("ConfigMap/app-config"), gomega.ContainSubstring("LOG_LEVEL"), gomega.Not(gomega.ContainSubstring("PORT")))))
	// The Deployment controller really rolled: a second ReplicaSet exists and
	// the new pods are ready.
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(2))
	waitRolledOut(t, d)
	g.Expect(replicaSets(t, ns, "web")).To(gomega.HaveLen(2), "one change, one rollout")
}

func TestWorkloadReconciler_RollsOnSecretChange(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, secret(ns, "db", map[string]string{"password": "one", "user": "app"}))
	d := deployment(ns, "api", map[string]string{"reroll.dev/auto": "true"}, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	}))
	create(t, d)
	recorded(t, d)

	update(t, secret(ns, "db", nil), func(s *corev1.Secret) { s.Data["password"] = []byte("two") })

	g.Eventually(func() []string { return rolledEvents(t, ns, "api") }).Should(gomega.ConsistOf(gomega.ContainSubstring("Secret/db changed keys password")))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey(trigger.ConfigHashAnnotation))
	for _, note := range rolledEvents(t, ns, "api") {
		g.Expect(note).NotTo(gomega.ContainSubstring("two"), "an Event never carries a value")
	}
}

func TestWorkloadReconciler_RollsStatefulSetAndDaemonSet(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{})
	create(t, configMap(ns, "shared", map[string]string{"k": "1"}))
	spec := podSpec(func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	})
	sts := statefulSet(ns, "db", autoOn, spec)
	ds := daemonSet(ns, "agent", autoOn, spec)
	create(t, sts, ds)
	recorded(t, sts)
	recorded(t, ds)
	g.Eventually(func() string { return get(t, sts).Status.CurrentRevision }).ShouldNot(gomega.BeEmpty())
	firstRevision := get(t, sts).Status.CurrentRevision

	update(t, configMap(ns, "shared", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "2" })

	g.Eventually(func() map[string]string { return get(t, sts).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() map[string]string { return get(t, ds).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	// The StatefulSet controller rolled its pod to a new revision.
	g.Eventually(func() appsv1.StatefulSetStatus { return get(t, sts).Status }).Should(gomega.And(
		gomega.HaveField("UpdateRevision", gomega.Not(gomega.Equal(firstRevision))),
		gomega.HaveField("CurrentRevision", gomega.Not(gomega.Equal(firstRevision))),
	))
	// The DaemonSet controller saw the new template.
	g.Eventually(func() int64 { return get(t, ds).Status.ObservedGeneration }).Should(gomega.Equal(int64(2)))
	g.Eventually(func() []string { return rolledEvents(t, ns, "db") }).Should(gomega.HaveLen(1))
	g.Eventually(func() []string { return rolledEvents(t, ns, "agent") }).Should(gomega.HaveLen(1))
}

// waitFirstReplicaSet waits until the Deployment controller has created the
// Deployment's first ReplicaSet: the baseline against which a test counts
// rollouts.
func waitFirstReplicaSet(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	newT(t).Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, d.Namespace, d.Name) }).Should(gomega.HaveLen(1))
}

// waitRolledOut waits, like `kubectl rollout status`, until the Deployment
// controller has seen the latest template and every replica is updated and
// ready.
func waitRolledOut(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	newT(t).Eventually(func(g gomega.Gomega) {
		cur := get(t, d)
		g.Expect(cur.Status.ObservedGeneration).To(gomega.Equal(cur.Generation))
		g.Expect(cur.Status.UpdatedReplicas).To(gomega.Equal(*cur.Spec.Replicas))
		g.Expect(cur.Status.ReadyReplicas).To(gomega.Equal(*cur.Spec.Replicas))
		g.Expect(cur.Status.Replicas).To(gomega.Equal(*cur.Spec.Replicas))
	}).Should(gomega.Succeed())
}

// replicaSets returns the ReplicaSets of the named Deployment.
func replicaSets(t *testing.T, ns, name string) []appsv1.ReplicaSet {
	t.Helper()
	var list appsv1.ReplicaSetList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels(labelsFor(name)))).To(gomega.Succeed())
	return list.Items
}
