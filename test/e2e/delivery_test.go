//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/plan"
)

// TestDelivery_WorkedExampleFromTheDocs runs docs/delivery.md's worked
// example as a user would: the chart installed with its defaults, Reroll's
// built binary with the chart's flags and its ServiceAccount's token (the
// chart's RBAC, its own installation key), the Namespaces annotated as the
// docs say (a bake time of 10s instead of 5m, to keep the test short), and
// a copy of ConfigMap ca, changed everywhere at once, in canary, production
// and a tenant's namespace that the operator did not place.
//
//  1. canary/web rolls first; production waits for it and its bake time,
//     then rolls, each workload once. The tenant's workload, wave -1000 and
//     never healthy, is a set of its own and holds nothing.
//  2. The canary's next rollout fails for real (a ResourceQuota refuses its
//     surge pod: ProgressDeadlineExceeded): the set halts, production does
//     not roll, before or after a restart of Reroll.
//  3. kubectl reroll resume of a tenant's workload whose annotation names
//     production's set resumes nothing; resume of production's workload rolls
//     each held workload once.
func TestDelivery_WorkedExampleFromTheDocs(t *testing.T) {
	g := newT(t)
	plugin := filepath.Join(t.TempDir(), "kubectl-reroll")
	build := exec.Command("go", "build", "-o", plugin, "./cmd/kubectl-reroll")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), string(out))

	sys := newNamespace(t, "e2e-delivery-sys-", restricted)
	helmInstall(t, "reroll", sys, nil)
	canary := newNamespace(t, "e2e-canary-", nil)
	prod := newNamespace(t, "e2e-production-", nil)
	tenant := newNamespace(t, "e2e-tenant-", nil)
	for ns, a := range map[string]map[string]string{
		canary: {delivery.WaveAnnotation: "-1", delivery.BakeTimeAnnotation: "10s"},
		prod:   {delivery.WaveAnnotation: "0"},
	} {
		mutate(t, &corev1.Namespace{}, "", ns, func(o client.Object) { o.SetAnnotations(a) })
	}
	type workload struct{ ns, name string }
	canaryWeb, prodWeb, prodAPI, tenantWeb := workload{canary, "web"}, workload{prod, "web"}, workload{prod, "api"}, workload{tenant, "web"}
	all := []workload{canaryWeb, prodWeb, prodAPI, tenantWeb}
	for _, ns := range []string{canary, prod, tenant} {
		g.Expect(k8s.Create(t.Context(), caBundle(ns, "one"))).To(gomega.Succeed())
	}
	for _, w := range all {
		d := readsCA(w.ns, w.name)
		if w == canaryWeb {
			// A rollout that takes a while, as a real canary's does.
			d.Spec.MinReadySeconds = 5
		}
		if w == tenantWeb {
			d.Annotations[delivery.WaveAnnotation] = "-1000"
		}
		g.Expect(k8s.Create(t.Context(), d)).To(gomega.Succeed())
	}

	kubeconfig, _ := serviceAccountKubeconfig(t, sys, "reroll")
	args := podArgs(t, sys, "reroll")
	prefix := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--change-sets="); ok {
			prefix = v
		}
	}
	g.Expect(prefix).NotTo(gomega.BeEmpty(), "the chart turns safe delivery on")
	env := map[string]string{"POD_NAMESPACE": sys, "POD_NAME": "reroll-e2e"}
	p := startRerollAsShipped(t, kubeconfig, args, env)
	// Reroll has looked at every workload (each reads ConfigMap ca; it
	// writes none of them before their first rollout).
	p.useMetricsToken(t, sys, args)
	g.Eventually(func() float64 { return p.sample(t, "reroll_references", map[string]string{"source_kind": "ConfigMap"}) }).Should(gomega.BeNumerically(">=", len(all)))
	for _, w := range all {
		waitAvailable(t, w.ns, w.name)
	}
	// The tenant's next rollout never becomes healthy: no surge pod, and a
	// deadline far away.
	mutate(t, &appsv1.Deployment{}, tenant, "web", func(o client.Object) {
		o.(*appsv1.Deployment).Spec.ProgressDeadlineSeconds = ptr.To[int32](3600)
	})
	waitAvailable(t, tenant, "web")
	quotaOfOnePod(t, tenant)

	// 1. Canary first, production after the canary's bake time.
	changeCA(t, "two", canary, prod, tenant)
	g.Eventually(func() int32 { return rolledEvents(t, canary, "web") }).Should(gomega.Equal(int32(1)))
	g.Eventually(func() int32 { return rolledEvents(t, tenant, "web") }).Should(gomega.Equal(int32(1)), "the tenant's own set rolls at once")
	g.Eventually(func() string { return pendingReason(t, prod, "web") }).Should(gomega.Equal(delivery.HoldWave))
	g.Expect(rolledEvents(t, prod, "web")).To(gomega.BeZero())
	for _, w := range []workload{prodWeb, prodAPI} {
		g.Eventually(func() int32 { return rolledEvents(t, w.ns, w.name) }).Should(gomega.Equal(int32(1)), "%s/%s rolls after the canary", w.ns, w.name)
	}
	c := memberOf(t, canary, "web")
	g.Expect(c.Healthy.IsZero()).To(gomega.BeFalse())
	for _, w := range []workload{prodWeb, prodAPI} {
		m := memberOf(t, w.ns, w.name)
		g.Expect(m.Sets).To(gomega.Equal(c.Sets), "the copies in canary and production are one change set")
		g.Expect(m.Rolled).NotTo(gomega.BeTemporally("<", c.Healthy.Add(10*time.Second)), "%s/%s rolled only after the canary baked", w.ns, w.name)
	}
	tr := memberOf(t, tenant, "web")
	g.Expect(tr.Sets).NotTo(gomega.Equal(c.Sets), "the tenant's copy is a set of its own")
	g.Expect(tr.Healthy.IsZero()).To(gomega.BeTrue(), "the tenant's rollout never became healthy")
	for _, w := range []workload{prodWeb, prodAPI} {
		waitAvailable(t, w.ns, w.name)
	}
	g.Consistently(func() []int32 {
		return []int32{rolledEvents(t, canary, "web"), rolledEvents(t, prod, "web"), rolledEvents(t, prod, "api")}
	}, 5*time.Second).Should(gomega.Equal([]int32{1, 1, 1}), "each rolled once")

	// 2. A failed canary halts production, across a restart.
	mutate(t, &appsv1.Deployment{}, canary, "web", func(o client.Object) {
		o.(*appsv1.Deployment).Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	})
	waitAvailable(t, canary, "web")
	quotaOfOnePod(t, canary)
	templates := map[workload]corev1.PodTemplateSpec{}
	for _, w := range []workload{prodWeb, prodAPI} {
		templates[w] = deploymentIn(t, w.ns, w.name).Spec.Template
	}
	changeCA(t, "three", canary, prod)
	g.Eventually(func() int32 { return rolledEvents(t, canary, "web") }).Should(gomega.Equal(int32(2)))
	g.Eventually(func() string { return memberOf(t, canary, "web").Failed }).Should(gomega.ContainSubstring("Progress deadline exceeded"))
	for _, w := range []workload{prodWeb, prodAPI} {
		g.Eventually(func() string { return pendingReason(t, w.ns, w.name) }).Should(gomega.Equal(delivery.HoldHalted))
	}
	g.Eventually(func() int { return len(eventsOf(t, canary, "web", delivery.ReasonChangeHalted)) }).ShouldNot(gomega.BeZero())
	id := memberOf(t, prod, "web").Sets[0]
	var record corev1.ConfigMap
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: sys, Name: halts.Name(prefix, id)}, &record)).To(gomega.Succeed())
	h, err := delivery.ParseHalt(record.Data[halts.DataKey])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(record.Data[halts.SignatureKey]).NotTo(gomega.BeEmpty(), "Reroll signs its halt records")
	g.Expect(h.Active()).To(gomega.BeTrue())
	g.Expect(h.Failed).To(gomega.Equal([]string{"Deployment/" + canary + "/web"}))

	p.stop(t)
	startRerollAsShipped(t, kubeconfig, args, env)
	g.Consistently(func() []corev1.PodTemplateSpec {
		return []corev1.PodTemplateSpec{deploymentIn(t, prod, "web").Spec.Template, deploymentIn(t, prod, "api").Spec.Template}
	}, 15*time.Second).Should(gomega.Equal([]corev1.PodTemplateSpec{templates[prodWeb], templates[prodAPI]}), "production keeps its pods after a restart")
	g.Expect(pendingReason(t, prod, "web")).To(gomega.Equal(delivery.HoldHalted))

	// 3. A tenant writes production's set on its own workload and asks for a
	// resume: nothing is resumed, production does not roll.
	mutate(t, &appsv1.Deployment{}, tenant, "web", func(o client.Object) {
		a := o.GetAnnotations()
		a[delivery.MemberAnnotation] = delivery.Record{Sets: []string{id}}.String()
		o.SetAnnotations(a)
	})
	resume := func(ns string) (string, error) {
		return run(nil, plugin, "--kubeconfig", plane.Kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "resume", "deployment/web", "-n", ns, "--reroll-namespace", sys, "--change-sets", prefix)
	}
	msg, err := resume(tenant)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("in no halted change set")), msg)
	g.Consistently(func() []int32 { return []int32{rolledEvents(t, prod, "web"), rolledEvents(t, prod, "api")} }, 10*time.Second).
		Should(gomega.Equal([]int32{1, 1}), "the forged annotation resumed nothing")
	g.Eventually(func() []string { return eventsOf(t, tenant, "web", plan.ReasonForgedState) }).ShouldNot(gomega.BeEmpty(), "Reroll removes the forgery")

	// The positive control: production's own workload resumes the set, and
	// each held workload rolls once.
	msg, err = resume(prod)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(msg).To(gomega.Equal("Resumed change set " + id + "\n"))
	for _, w := range []workload{prodWeb, prodAPI} {
		g.Eventually(func() int32 { return rolledEvents(t, w.ns, w.name) }).Should(gomega.Equal(int32(2)), "%s/%s rolls once resumed", w.ns, w.name)
	}
	g.Consistently(func() []int32 { return []int32{rolledEvents(t, prod, "web"), rolledEvents(t, prod, "api")} }, 10*time.Second).
		Should(gomega.Equal([]int32{2, 2}), "each held workload rolled once")
}

// caBundle is ConfigMap ca in ns, with content v, as trust-manager writes
// it into every namespace.
func caBundle(ns, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"}, Data: map[string]string{"ca.crt": v}}
}

// changeCA writes content v to ca in every namespace, as a replicator does.
func changeCA(t *testing.T, v string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		mutate(t, &corev1.ConfigMap{}, ns, "ca", func(o client.Object) { o.(*corev1.ConfigMap).Data = caBundle(ns, v).Data })
	}
}

// readsCA is an opted-in Deployment ns/name of one replica that reads ca.
func readsCA(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"reroll.dev/auto": "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}},
				}}},
			},
		},
	}
}

// waitAvailable waits until Deployment ns/name has rolled out its latest
// spec and its replica is ready.
func waitAvailable(t *testing.T, ns, name string) {
	t.Helper()
	newT(t).Eventually(func(g gomega.Gomega) {
		d := deploymentIn(t, ns, name)
		g.Expect(d.Status.ObservedGeneration).To(gomega.Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(gomega.Equal(*d.Spec.Replicas))
		g.Expect(d.Status.AvailableReplicas).To(gomega.Equal(*d.Spec.Replicas))
		g.Expect(d.Status.Replicas).To(gomega.Equal(*d.Spec.Replicas))
	}).Should(gomega.Succeed())
}

// quotaOfOnePod lets ns run one pod: a Deployment of one replica cannot
// create its surge pod, and its next rollout makes no progress.
func quotaOfOnePod(t *testing.T, ns string) {
	t.Helper()
	g := newT(t)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-pod"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	g.Expect(k8s.Create(t.Context(), q)).To(gomega.Succeed())
	g.Eventually(func() corev1.ResourceList {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(q), q)).To(gomega.Succeed())
		return q.Status.Used
	}).Should(gomega.HaveKeyWithValue(corev1.ResourcePods, resource.MustParse("1")), "the quota counts the running pod")
}

// memberOf reads workload ns/name's part of its change set, as kubectl get
// shows it.
func memberOf(t *testing.T, ns, name string) delivery.Record {
	t.Helper()
	r, err := delivery.ParseRecord(plan.Displayed(deploymentIn(t, ns, name).Annotations, delivery.MemberAnnotation))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return r
}

// pendingReason is the reason of Deployment ns/name's reroll.dev/pending.
func pendingReason(t *testing.T, ns, name string) string {
	t.Helper()
	return string(plan.DisplayedPendingReason(deploymentIn(t, ns, name).Annotations))
}

// eventsOf returns the messages of the Events with reason on ns/name.
func eventsOf(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var list corev1.EventList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Name == name {
			out = append(out, e.Message)
		}
	}
	return out
}
