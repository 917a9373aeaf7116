//go:build e2e

package e2e

import (
	"slices"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names Reroll writes (internal/controller, internal/trigger); spelled out
// here because these tests see Reroll only from outside.
const (
	observedAnnotation   = "reroll.dev/observed"
	configHashAnnotation = "reroll.dev/config-hash"
)

// expectFirstSight waits until Reroll p has looked at createWorkload's
// Deployment in ns: its references to ConfigMaps and Secrets are counted in
// reroll_references (at least configMaps and secrets; a Reroll that watches
// more namespaces counts their workloads too). Installing Reroll writes no
// workload (--defer-record, the default: the record reroll.dev/observed
// waits for the first rollout), so that metric, not an annotation, is the
// sign that first sight is over. Then it checks that first sight rolled
// nothing and, unless p runs with --reload-on-delete or --enable-webhook
// (which write the record on first sight), wrote nothing.
func expectFirstSight(t *testing.T, p *process, ns string, configMaps, secrets float64) {
	t.Helper()
	g := newT(t)
	g.Eventually(func() float64 { return p.sample(t, "reroll_references", map[string]string{"source_kind": "ConfigMap"}) }).Should(gomega.BeNumerically(">=", configMaps))
	g.Eventually(func() float64 { return p.sample(t, "reroll_references", map[string]string{"source_kind": "Secret"}) }).Should(gomega.BeNumerically(">=", secrets))
	d := deploymentIn(t, ns, "web")
	g.Expect(d.Spec.Template.Annotations).NotTo(gomega.HaveKey(configHashAnnotation), "first sight rolls nothing")
	recordsOnFirstSight := slices.ContainsFunc(p.cmd.Args, func(a string) bool {
		return a == "--reload-on-delete=true" || a == "--reload-on-delete" || a == "--enable-webhook" || a == "--enable-webhook=true"
	})
	if !recordsOnFirstSight {
		g.Expect(d.Annotations).NotTo(gomega.HaveKey(observedAnnotation), "the install writes no workload")
	}
}

// createWorkload creates, in ns, ConfigMap app-config, Secret db and the
// Deployment web, opted in with reroll.dev/auto, that reads every key of
// app-config (envFrom) and only key "password" of db.
func createWorkload(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	g := newT(t)
	labels := map[string]string{"app": "web"}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"}, Data: map[string]string{"LOG_LEVEL": "info"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{"password": "one", "user": "app"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{"reroll.dev/auto": "true"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "web", Image: "registry.example/web:1",
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
						Env: []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
					}}},
				},
			},
		},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(t.Context(), o)).To(gomega.Succeed())
	}
	return objs[2].(*appsv1.Deployment)
}

// expectCoreBehaviour changes the data and metadata of createWorkload's
// objects and checks what a user sees: a ConfigMap data change rolls the
// Deployment (a new ReplicaSet), a label-only change writes nothing, a
// Secret change of the consumed key rolls it again, a change of an
// unconsumed key writes nothing. That is 2 rollouts in ns. It starts once
// Reroll p has looked at the workload (expectFirstSight).
func expectCoreBehaviour(t *testing.T, p *process, ns string) {
	t.Helper()
	g := newT(t)
	expectFirstSight(t, p, ns, 1, 1)
	template := func() map[string]string { return deploymentIn(t, ns, "web").Spec.Template.Annotations }

	mutate(t, &corev1.ConfigMap{}, ns, "app-config", func(o client.Object) { o.(*corev1.ConfigMap).Data["LOG_LEVEL"] = "debug" })
	g.Eventually(template).Should(gomega.HaveKey(configHashAnnotation))
	first := template()[configHashAnnotation]
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns) }).Should(gomega.HaveLen(2), "the Deployment controller rolled")

	generation := deploymentIn(t, ns, "web").Generation
	mutate(t, &corev1.ConfigMap{}, ns, "app-config", func(o client.Object) { o.SetLabels(map[string]string{"team": "blue"}) })
	g.Consistently(func() int64 { return deploymentIn(t, ns, "web").Generation }).Should(gomega.Equal(generation), "a label-only change writes nothing")

	mutate(t, &corev1.Secret{}, ns, "db", func(o client.Object) { o.(*corev1.Secret).Data["password"] = []byte("two") })
	g.Eventually(func() string { return template()[configHashAnnotation] }).ShouldNot(gomega.Equal(first))
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns) }).Should(gomega.HaveLen(3))

	generation = deploymentIn(t, ns, "web").Generation
	mutate(t, &corev1.Secret{}, ns, "db", func(o client.Object) { o.(*corev1.Secret).Data["user"] = []byte("other") })
	g.Consistently(func() int64 { return deploymentIn(t, ns, "web").Generation }).Should(gomega.Equal(generation), "an unconsumed key rolls nothing")
}

func deploymentIn(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d)).To(gomega.Succeed())
	return &d
}

func replicaSets(t *testing.T, ns string) []appsv1.ReplicaSet {
	t.Helper()
	var list appsv1.ReplicaSetList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	return list.Items
}

// mutate reads the object, applies f and writes it, retrying on conflict.
func mutate(t *testing.T, obj client.Object, ns, name string, f func(client.Object)) {
	t.Helper()
	newT(t).Eventually(func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		f(obj)
		if err := k8s.Update(t.Context(), obj); err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("updating %s/%s: %v", ns, name, err)
		} else if err != nil {
			return err
		}
		return nil
	}).Should(gomega.Succeed())
}
