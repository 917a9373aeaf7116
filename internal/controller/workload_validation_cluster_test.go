package controller

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/validate"
	"github.com/reroll/reroll/internal/validator"
)

var clusterValidatorCRD sync.Once

// installClusterValidatorCRD creates the ClusterValidator CRD of
// config/crd, once for the package, and waits until it is served.
func installClusterValidatorCRD(t *testing.T) {
	t.Helper()
	g := newT(t)
	clusterValidatorCRD.Do(func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "validators", "reroll.dev_clustervalidators.yaml"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(yaml.Unmarshal(b, &crd)).To(gomega.Succeed())
		if err := k8s.Create(t.Context(), &crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the ClusterValidator CRD: %v", err)
		}
	})
	g.Eventually(func() error {
		return k8s.List(t.Context(), &rerollv1alpha1.ClusterValidatorList{})
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
}

// clusterReadyCondition is the ClusterValidator's Ready condition once
// observed at its generation.
func clusterReadyCondition(t *testing.T, name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		cur := &rerollv1alpha1.ClusterValidator{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, cur); err != nil || cur.Status.ObservedGeneration != cur.Generation {
			return nil
		}
		return meta.FindStatusCondition(cur.Status.Conditions, validator.ConditionReady)
	}
}

func TestValidation_AClusterValidatorHoldsInTheNamespacesItSelectsOnly(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	installClusterValidatorCRD(t)
	g := newT(t)
	selected, other := newNamespace(t), newNamespace(t)
	// A label of this test only: other tests' namespaces never match.
	update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: selected}}, func(n *corev1.Namespace) {
		n.Labels["reroll-test/platform-rules"] = selected
	})
	opts := validationOptions(t)
	opts.Scope.Namespaces = []string{selected, other}
	startReroll(t, selected, opts)
	cv := &rerollv1alpha1.ClusterValidator{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-" + selected},
		Spec: rerollv1alpha1.ClusterValidatorSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"reroll-test/platform-rules": selected}},
			ValidatorSpec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{"app-config"},
				Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON}}},
		},
	}
	create(t, cv)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cv) })
	g.Eventually(clusterReadyCondition(t, cv.Name)).Should(gomega.And(
		gomega.HaveField("Status", metav1.ConditionTrue), gomega.HaveField("Reason", validate.CondCompiled)))
	apps := map[string]*appsv1.Deployment{}
	for _, ns := range []string{selected, other} {
		create(t, configMap(ns, "app-config", map[string]string{"config.json": `{"level": "info"}`}))
		apps[ns] = deployment(ns, "app", autoOn, podSpec(envFrom("app-config")))
		create(t, apps[ns])
		recorded(t, apps[ns])
	}

	// Positive first: valid content rolls in both namespaces, once.
	for _, ns := range []string{selected, other} {
		update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"level": "debug"}` })
	}
	for _, ns := range []string{selected, other} {
		g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1), "namespace %s", ns)
	}

	// Invalid JSON in both: held where the ClusterValidator selects the
	// namespace, rolled where it does not.
	for _, ns := range []string{selected, other} {
		update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"level": "warn",}` })
	}
	g.Eventually(func() []string { return rolledEvents(t, other, "app") }).Should(gomega.HaveLen(2), "not selected: rolls")
	g.Eventually(func() []string { return eventsWithReason(t, selected, "app", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring(`ClusterValidator/` + cv.Name + `/config-json: key "config.json" is not valid JSON`)))
	g.Expect(pendingReason(t, apps[selected])).To(gomega.Equal(validator.HoldInvalid))
	g.Consistently(func() []string { return rolledEvents(t, selected, "app") }).Should(gomega.HaveLen(1))
	g.Expect(eventsWithReason(t, other, "app", validator.ReasonInvalidContent)).To(gomega.BeEmpty())

	// A rule that does not compile: Ready=False at the new generation.
	update(t, &rerollv1alpha1.ClusterValidator{ObjectMeta: metav1.ObjectMeta{Name: cv.Name}}, func(v *rerollv1alpha1.ClusterValidator) {
		v.Spec.Rules[0] = rerollv1alpha1.ValidationRule{Name: "broken", Expression: "data['a'] +"}
	})
	g.Eventually(clusterReadyCondition(t, cv.Name)).Should(gomega.And(
		gomega.HaveField("Status", metav1.ConditionFalse), gomega.HaveField("Reason", validate.CondInvalidRule),
		gomega.HaveField("Message", gomega.ContainSubstring("rule broken"))))
}
