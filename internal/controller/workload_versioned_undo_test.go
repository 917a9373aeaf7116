package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	safe "github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
)

// TestWorkloadReconciler_FailedStatefulSetCanaryUndoesItself: with safe
// delivery, a versioned StatefulSet canary whose rollout fails (an
// admission policy refuses its new pod, so the rollout is not complete
// within --rollout-timeout, the breaker's signal for a kind without a
// deadline of its own) is undone to its previous pinned revision, read
// from its ControllerRevisions, with a RolledBack Event; the change set
// halts, and production never rolls.
func TestWorkloadReconciler_FailedStatefulSetCanaryUndoesItself(t *testing.T) {
	t.Parallel()
	failedCanaryUndoesItself(t, func(ns string) client.Object {
		return statefulSet(ns, "web", autoOn, podSpec(envFrom("cfg")))
	})
}

// TestWorkloadReconciler_FailedDaemonSetCanaryUndoesItself is
// TestWorkloadReconciler_FailedStatefulSetCanaryUndoesItself for a
// DaemonSet (one pod, on the plane's Node).
func TestWorkloadReconciler_FailedDaemonSetCanaryUndoesItself(t *testing.T) {
	t.Parallel()
	failedCanaryUndoesItself(t, func(ns string) client.Object {
		return daemonSet(ns, "web", autoOn, podSpec(envFrom("cfg")))
	})
}

// failedCanaryUndoesItself runs the failed canary's undo for the
// workloads made by mk (named web, reading ConfigMap cfg through envFrom)
// in a versioned canary namespace (wave -1) and production namespace
// (wave 0).
func failedCanaryUndoesItself(t *testing.T, mk func(ns string) client.Object) {
	t.Helper()
	g := newT(t)
	own, canaryNS, prodNS := newNamespace(t), waveNamespace(t, "-1"), waveNamespace(t, "0")
	info, bad := map[string]string{"level": "info"}, map[string]string{"level": "bad"}
	var ws []client.Object
	for _, ns := range []string{canaryNS, prodNS} {
		update(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
			n.Annotations[pin.VersionedAnnotation] = "true"
		})
		create(t, configMap(ns, "cfg", info))
		w := mk(ns)
		create(t, w)
		ws = append(ws, w)
	}
	canary, prod := ws[0], ws[1]
	opts := deliveryOptions(t, own, own, canaryNS, prodNS)
	// The kind has no deadline of its own: the breaker's signal is a
	// rollout not complete within --rollout-timeout.
	opts.RolloutTimeout = 10 * time.Second
	startReroll(t, own, opts)
	key := opts.Key
	good, failed := copyName(key, canaryNS, "cfg", info), copyName(key, canaryNS, "cfg", bad)
	for _, w := range ws {
		g.Eventually(func() []string { return templateNames(podTemplateOf(get(t, w))) }).Should(gomega.Equal([]string{copyName(key, w.GetNamespace(), "cfg", info)}))
		waitSetRolledOut(t, w)
	}
	g.Eventually(func() [][]string { return podsNaming(t, canaryNS, "web") }).Should(gomega.Equal([][]string{{good}}))
	refusePodsNaming(t, canaryNS, failed, good)
	prodTemplate := *podTemplateOf(get(t, prod))

	replicate(t, bad, canaryNS, prodNS)
	// The canary rolls to the copy of the bad content, whose pod is
	// refused, and fails at the rollout timeout.
	g.Eventually(func() []string { return rolledEvents(t, canaryNS, "web") }).Should(gomega.HaveLen(1))
	g.Expect(copiesOf(t, canaryNS, "cfg")).To(gomega.HaveKey(failed))
	g.Eventually(func() string { return member(t, canary).Failed }, 30*time.Second).Should(gomega.ContainSubstring("not complete within 10s"))
	// Undone: its template names the copy of the good content again, and
	// its pod comes back on it.
	g.Eventually(func() []string { return eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack) }).Should(gomega.HaveLen(1),
		func() string {
			return fmt.Sprintf("a RolledBack Event; NotRolledBack: %q", eventsWithReason(t, canaryNS, "web", plan.ReasonNotRolledBack))
		})
	note := eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack)[0]
	g.Expect(note).To(gomega.ContainSubstring(member(t, canary).Sets[0]))
	g.Expect(note).To(gomega.ContainSubstring("not complete within 10s"))
	g.Expect(note).To(gomega.ContainSubstring("ConfigMap/" + good))
	g.Expect(templateNames(podTemplateOf(get(t, canary)))).To(gomega.Equal([]string{good}))
	g.Eventually(func() [][]string { return podsNaming(t, canaryNS, "web") }).Should(gomega.Equal([][]string{{good}}))
	waitSetRolledOut(t, canary)
	// The change set halts; production never rolls, and the source keeps
	// the bad content (never written by Reroll).
	g.Eventually(func() string { return pendingReason(t, prod) }).Should(gomega.Equal(safe.HoldHalted))
	g.Consistently(func() []string { return rolledEvents(t, prodNS, "web") }).Should(gomega.BeEmpty())
	g.Expect(*podTemplateOf(get(t, prod))).To(gomega.Equal(prodTemplate))
	g.Expect(get(t, configMap(canaryNS, "cfg", nil)).Data).To(gomega.Equal(bad))
	g.Expect(eventsWithReason(t, canaryNS, "web", plan.ReasonRolledBack)).To(gomega.HaveLen(1), "undone once")
	g.Expect(eventsWithReason(t, canaryNS, "web", plan.ReasonNotRolledBack)).To(gomega.BeEmpty())
}

// podTemplateOf is the pod template of a StatefulSet, DaemonSet or
// Deployment.
func podTemplateOf(w client.Object) *corev1.PodTemplateSpec {
	switch w := w.(type) {
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	case *appsv1.Deployment:
		return &w.Spec.Template
	}
	panic(fmt.Sprintf("no pod template in %T", w))
}

// waitSetRolledOut waits, like `kubectl rollout status`, until the
// StatefulSet or DaemonSet controller has seen the latest template and
// every pod runs it, ready.
func waitSetRolledOut(t *testing.T, w client.Object) {
	t.Helper()
	newT(t).Eventually(func(g gomega.Gomega) {
		switch cur := get(t, w).(type) {
		case *appsv1.StatefulSet:
			s := cur.Status
			g.Expect(s.ObservedGeneration).To(gomega.Equal(cur.Generation))
			g.Expect(s.UpdateRevision).NotTo(gomega.BeEmpty())
			g.Expect(s.CurrentRevision).To(gomega.Equal(s.UpdateRevision))
			g.Expect(s.UpdatedReplicas).To(gomega.Equal(*cur.Spec.Replicas))
			g.Expect(s.ReadyReplicas).To(gomega.Equal(*cur.Spec.Replicas))
		case *appsv1.DaemonSet:
			s := cur.Status
			g.Expect(s.ObservedGeneration).To(gomega.Equal(cur.Generation))
			g.Expect(s.DesiredNumberScheduled).To(gomega.BeNumerically(">", 0))
			g.Expect(s.UpdatedNumberScheduled).To(gomega.Equal(s.DesiredNumberScheduled))
			g.Expect(s.NumberReady).To(gomega.Equal(s.DesiredNumberScheduled))
		default:
			g.Expect(cur).To(gomega.BeNil(), "not a StatefulSet or DaemonSet")
		}
	}).Should(gomega.Succeed())
}

// refusePodsNaming makes the API server refuse every pod created in ns
// whose container reads ConfigMap refused through envFrom (a
// ValidatingAdmissionPolicy and its binding, removed at the test's end):
// a canary rolled to that copy cannot start its pod, as a bad
// configuration that crashes the pod would keep it from serving. It
// returns once the policy is in force (a dry-run pod naming refused is
// refused) and a pod naming allowed is still admitted.
func refusePodsNaming(t *testing.T, ns, refused, allowed string) {
	t.Helper()
	g := newT(t)
	name := "refuse-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("!object.spec.containers.exists(c, has(c.envFrom) && c.envFrom.exists(e, has(e.configMapRef) && e.configMapRef.name == '%s'))", refused),
				Message:    "the pod reads the refused ConfigMap " + refused,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	create(t, policy, binding)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), binding)
		_ = k8s.Delete(context.Background(), policy)
	})
	probe := func(cm string) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}, Spec: podSpec(envFrom(cm))}
		return k8s.Create(t.Context(), p, client.DryRunAll)
	}
	g.Eventually(func() error { return probe(refused) }).Should(gomega.MatchError(gomega.ContainSubstring("refused ConfigMap")))
	g.Expect(probe(allowed)).To(gomega.Succeed())
}
