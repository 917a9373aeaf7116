package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
)

// TestStatus_RotationShowsThePodsStillOnEachVersion rotates a Secret of a
// Deployment pinned to copies (made here with internal/pin, as pinning
// makes them) while one pod stays on the previous version, with Reroll
// running: `status secret/NAME` names that pod under the previous version
// until it is gone, then shows the version converged.
func TestStatus_RotationShowsThePodsStillOnEachVersion(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key, err := digest.NewKey(bytes.Repeat([]byte{7}, digest.MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	startReroll(t, ns, controller.Options{PlanOptions: controller.PlanOptions{Key: key}}, nil)

	copyOf := func(password string) client.Object {
		c, err := pin.Build(key, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Data: map[string][]byte{"password": []byte(password)}})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		create(t, c)
		return c
	}
	db := secret(ns, "db", map[string]string{"password": "correct-horse-1"})
	create(t, db)
	d := deployment(ns, "api", nil, pod(container()))
	create(t, d)
	v1 := copyOf("correct-horse-1")
	setSecret := func(name string) {
		g.Eventually(func() error {
			g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(d), d)).To(gomega.Succeed())
			d.Spec.Template.Spec = pod(container(func(c *corev1.Container) {
				c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
			}))
			return k8s.Update(t.Context(), d)
		}).Should(gomega.Succeed())
	}
	running := func(sel client.MatchingLabels) []corev1.Pod {
		var pods corev1.PodList
		g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(ns), sel)).To(gomega.Succeed())
		return pods.Items
	}
	setSecret(v1.GetName())
	// Wait for the rollout to v1 to finish: one pod left, and it reads v1
	// (the pod of the template before v1 may be the only one for a moment).
	var kept corev1.Pod
	g.Eventually(func(g gomega.Gomega) {
		pods := running(client.MatchingLabels(labelsFor("api")))
		g.Expect(pods).To(gomega.HaveLen(1))
		g.Expect(pods[0].Spec.Containers[0].EnvFrom).To(gomega.ContainElement(gomega.HaveField("SecretRef.Name", v1.GetName())))
		kept = pods[0]
	}).Should(gomega.Succeed())
	// The pod on the first version leaves its ReplicaSet, and stays.
	kept.Labels = map[string]string{"kept": "yes"}
	g.Expect(k8s.Update(t.Context(), &kept)).To(gomega.Succeed())

	g.Eventually(func() error {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(db), db)).To(gomega.Succeed())
		db.Data = map[string][]byte{"password": []byte("correct-horse-2")}
		return k8s.Update(t.Context(), db)
	}).Should(gomega.Succeed())
	v2 := copyOf("correct-horse-2")
	setSecret(v2.GetName())

	status := func() rotationReport {
		out, err := kubectlReroll(t, "-n", ns, "status", "secret/db", "-o", "json")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var r rotationReport
		g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
		return r
	}
	g.Eventually(func(g gomega.Gomega) {
		r := status()
		g.Expect(r.Versions).To(gomega.HaveLen(2))
		g.Expect(r.Versions[0].Copy).To(gomega.Equal(v2.GetName()))
		g.Expect(r.Versions[0].State).To(gomega.Equal(versionCurrent))
		g.Expect(r.Versions[0].Workloads).To(gomega.Equal([]string{"Deployment/api"}))
		g.Expect(r.Versions[0].Pods).To(gomega.HaveLen(1))
		g.Expect(r.Versions[1].Copy).To(gomega.Equal(v1.GetName()))
		g.Expect(r.Versions[1].State).To(gomega.Equal(versionPrevious), "Reroll recorded the previous version")
		g.Expect(r.Versions[1].Workloads).To(gomega.Equal([]string{"Pod/" + kept.Name}))
		g.Expect(r.Versions[1].Pods).To(gomega.Equal([]string{kept.Name}))
	}).Should(gomega.Succeed())

	g.Expect(k8s.Delete(t.Context(), &kept, client.GracePeriodSeconds(0))).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		r := status()
		g.Expect(r.Versions).To(gomega.HaveLen(2))
		g.Expect(r.Versions[1].State).To(gomega.Equal(versionConverged))
		g.Expect(r.Versions[1].Pods).To(gomega.BeEmpty())
		g.Expect(r.Versions[1].Converged).NotTo(gomega.BeNil())
	}).Should(gomega.Succeed())
	out, err := kubectlReroll(t, "-n", ns, "status", "secret/db")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).To(gomega.ContainSubstring(v1.GetName()))
	g.Expect(out).NotTo(gomega.ContainSubstring("correct-horse"), "no value")
}
