package controller

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/plan"
)

// revisionsNaming returns, per revision number, the ConfigMaps that the
// pod template of each ControllerRevision owned by obj names: what a
// StatefulSet's or DaemonSet's pod of that revision starts from (the
// controllers store {"spec":{"template":...}} in a revision's data).
func revisionsNaming(t *testing.T, obj client.Object) map[int64][]string {
	t.Helper()
	g := newT(t)
	var list appsv1.ControllerRevisionList
	g.Expect(k8s.List(t.Context(), &list, client.InNamespace(obj.GetNamespace()))).To(gomega.Succeed())
	out := map[int64][]string{}
	for _, cr := range list.Items {
		if !slices.ContainsFunc(cr.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == obj.GetUID() }) {
			continue
		}
		var patch struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		g.Expect(json.Unmarshal(cr.Data.Raw, &patch)).To(gomega.Succeed(), "revision %s", cr.Name)
		out[cr.Revision] = templateNames(&patch.Spec.Template)
	}
	return out
}

// versionedRevisions is the body of the StatefulSet and DaemonSet tests:
// obj (created by the test, versioned, reading ConfigMap app-config
// through envFrom, revisionHistoryLimit 1) is pinned on first sight, then
// app-config changes twice. Each time the template names the new copy,
// the pods move to it, and the ControllerRevision of the revision before
// names the older copy; pin-gc keeps that older copy while the revision
// exists, and deletes it once the controller has dropped the revision
// beyond revisionHistoryLimit.
func versionedRevisions(t *testing.T, ns string, obj client.Object, template func() *corev1.PodTemplateSpec) {
	t.Helper()
	g := newT(t)
	key := testKey(t, 41)
	contents := []map[string]string{{"color": "blue"}, {"color": "green"}, {"color": "red"}}
	src := configMap(ns, "app-config", contents[0])
	create(t, src)
	create(t, obj)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
	var names []string
	for i, c := range contents[:2] {
		if i > 0 {
			update(t, src, func(cm *corev1.ConfigMap) { cm.Data = c })
		}
		names = append(names, copyName(key, ns, "app-config", c))
		g.Eventually(func() []string { return templateNames(template()) }).Should(gomega.Equal(names[i:i+1]), "content %d", i)
		g.Eventually(func() [][]string { return podsNaming(t, ns, obj.GetName()) }).Should(gomega.And(
			gomega.HaveLen(1), gomega.HaveEach(names[i:i+1])), "content %d", i)
	}
	blue, green := names[0], names[1]
	// Revision 1 is the workload as created (it names the source); the
	// first sight's pin made revision 2, the change revision 3. With
	// revisionHistoryLimit 1, the controller keeps revision 2 beside the
	// current one and drops revision 1.
	g.Eventually(func() map[int64][]string { return revisionsNaming(t, obj) }).Should(gomega.Equal(
		map[int64][]string{2: {blue}, 3: {green}}))
	g.Expect(copiesOf(t, ns, "app-config")[blue].Data).To(gomega.Equal(contents[0]), "the older copy holds the older bytes")

	// A copy that nothing names, made after blue: once it is collected,
	// blue is past its grace too and a pass has looked at it (the positive
	// control of the check that blue stays).
	unused := pinCopy(t, key, configMap(ns, "unused", map[string]string{"k": "1"}), get(t, obj))
	g.Eventually(func() bool { return exists(t, unused) }, pinGCWait, time.Second).Should(gomega.BeFalse(),
		"the copy nothing names is collected")
	// Only revision 2 names blue now: no template, no pod.
	g.Expect(templateNames(template())).To(gomega.Equal([]string{green}))
	g.Expect(podsNaming(t, ns, obj.GetName())).To(gomega.HaveEach([]string{green}))
	g.Expect(revisionsNaming(t, obj)).To(gomega.HaveKeyWithValue(int64(2), []string{blue}))
	g.Consistently(func() []string { return slices.Collect(maps.Keys(copiesOf(t, ns, "app-config"))) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.ContainElements(blue, green),
		"the copy a kept revision names stays")

	// The third content: revision 4; revision 2 goes beyond the history,
	// and blue with it; green, named by revision 3, stays.
	update(t, src, func(cm *corev1.ConfigMap) { cm.Data = contents[2] })
	red := copyName(key, ns, "app-config", contents[2])
	g.Eventually(func() []string { return templateNames(template()) }).Should(gomega.Equal([]string{red}))
	g.Eventually(func() [][]string { return podsNaming(t, ns, obj.GetName()) }).Should(gomega.And(
		gomega.HaveLen(1), gomega.HaveEach([]string{red})))
	g.Eventually(func() map[int64][]string { return revisionsNaming(t, obj) }).Should(gomega.Equal(
		map[int64][]string{3: {green}, 4: {red}}))
	g.Eventually(func() bool { _, ok := copiesOf(t, ns, "app-config")[blue]; return ok }, pinGCWait, time.Second).Should(gomega.BeFalse(),
		"the copy of a dropped revision is collected")
	g.Consistently(func() []string { return slices.Collect(maps.Keys(copiesOf(t, ns, "app-config"))) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.ConsistOf(green, red))
}

// TestWorkloadReconciler_VersionedStatefulSetKeepsTheCopyOfAKeptRevision:
// a versioned StatefulSet is pinned like a Deployment, its
// ControllerRevisions name the copies of their contents, and pin-gc keeps
// a copy exactly as long as a revision within revisionHistoryLimit names
// it.
func TestWorkloadReconciler_VersionedStatefulSetKeepsTheCopyOfAKeptRevision(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	s := statefulSet(ns, "db", versionedOn, podSpec(envFrom("app-config")))
	s.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	versionedRevisions(t, ns, s, func() *corev1.PodTemplateSpec { return &get(t, s).Spec.Template })
}

// TestWorkloadReconciler_VersionedDaemonSetKeepsTheCopyOfAKeptRevision:
// the same for a DaemonSet (one pod, on the plane's only Node).
func TestWorkloadReconciler_VersionedDaemonSetKeepsTheCopyOfAKeptRevision(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	d := daemonSet(ns, "agent", versionedOn, podSpec(envFrom("app-config")))
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	versionedRevisions(t, ns, d, func() *corev1.PodTemplateSpec { return &get(t, d).Spec.Template })
}
