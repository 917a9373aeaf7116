package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// The copies' garbage collection (internal/pingc) keeps a copy for
// pingc.DefaultGrace after its creation even when nothing names it, then
// looks every pingc.DefaultPeriod: these tests wait for that, as Reroll
// ships. Copies are made with internal/pin's constructors and named from
// the templates by the tests themselves.
const pinGCWait = pingc.DefaultGrace + 3*pingc.DefaultPeriod + 30*time.Second

// pinCopy creates the copy of src that pin.Build makes under key (without
// owners, as Reroll makes it), and returns it.
func pinCopy(t *testing.T, key digest.Key, src client.Object) client.Object {
	t.Helper()
	g := newT(t)
	// Build reads values: a Secret's StringData is the API server's to
	// fold into Data.
	if s, ok := src.(*corev1.Secret); ok && len(s.StringData) > 0 {
		s = s.DeepCopy()
		s.Data = map[string][]byte{}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
		src = s
	}
	c, err := pin.Build(key, src)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	create(t, c)
	return c
}

// exists reports whether obj exists with its UID.
func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	m := &metav1.PartialObjectMetadata{}
	gvk, err := k8s.GroupVersionKindFor(obj)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	m.SetGroupVersionKind(gvk)
	err = k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), m)
	if apierrors.IsNotFound(err) {
		return false
	}
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return m.UID == obj.GetUID()
}

// envFromObject reads the ConfigMap or Secret obj through envFrom.
func envFromObject(obj client.Object) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		ref := corev1.LocalObjectReference{Name: obj.GetName()}
		if _, ok := obj.(*corev1.Secret); ok {
			s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}})
			return
		}
		s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}})
	}
}

// keepOnePod takes one pod of the Deployment out of its ReplicaSet (a new
// label the selector does not match: the ReplicaSet releases it and
// starts another), so that it outlives the ReplicaSet, and returns it.
func keepOnePod(t *testing.T, d *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	g := newT(t)
	var pods corev1.PodList
	g.Eventually(func() []corev1.Pod {
		g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(d.Namespace), client.MatchingLabels(labelsFor(d.Name)))).To(gomega.Succeed())
		return pods.Items
	}).ShouldNot(gomega.BeEmpty())
	p := pods.Items[0].DeepCopy()
	update(t, p, func(p *corev1.Pod) { p.Labels = map[string]string{"kept": "yes"} })
	g.Eventually(func() []metav1.OwnerReference { return get(t, p).OwnerReferences }).Should(gomega.BeEmpty())
	return p
}

func TestPinGC_DeletesACopyOnlyOnceNoTemplateReplicaSetRevisionJobOrPodNamesIt(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 33)
	counter := metrics.NewRequestCounter()
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(counter.Wrap)
	startRerollAs(t, cfg, ns, Options{PlanOptions: plan.Options{Key: key}})
	// What the collector cost, for docs/operations.md: its lists, reads of
	// copies' metadata and deletes over the whole test.
	t.Cleanup(func() {
		for req, n := range counter.Counts() {
			switch req.Resource {
			case "replicasets", "controllerrevisions", "pods", "jobs", "configmaps":
				t.Logf("requests %s %s %d: %d", req.Verb, req.Resource, req.Code, n)
			}
		}
	})

	// The Deployment's first version, one pod of which is kept alive once
	// the Deployment moved on and its ReplicaSet is gone
	// (revisionHistoryLimit 0).
	app := configMap(ns, "app", map[string]string{"k": "1"})
	create(t, app)
	d := deployment(ns, "web", nil, podSpec())
	d.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	create(t, d)
	v1 := pinCopy(t, key, app)
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec = podSpec(envFromObject(v1)) })
	waitRolledOut(t, d)
	kept := keepOnePod(t, d)
	waitRolledOut(t, d)
	app2 := configMap(ns, "app", map[string]string{"k": "2"})
	v2 := pinCopy(t, key, app2)
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec = podSpec(envFromObject(v2)) })
	waitRolledOut(t, d)
	g.Eventually(func() []appsv1.ReplicaSet { return replicaSets(t, ns, "web") }).Should(gomega.HaveLen(1), "the old ReplicaSet is gone")

	// A copy each that only a ReplicaSet (scaled to zero), a
	// ControllerRevision, or a Job names.
	byRS := pinCopy(t, key, configMap(ns, "rs-only", map[string]string{"k": "1"}))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labelsFor("old")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsFor("old")}, Spec: podSpec(envFromObject(byRS))},
		},
	}
	byRevision := pinCopy(t, key, secret(ns, "revision-only", map[string]string{"k": "1"}))
	tmpl, err := json.Marshal(map[string]any{"spec": map[string]any{"template": corev1.PodTemplateSpec{Spec: podSpec(envFromObject(byRevision))}}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	revision := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-1"}, Revision: 1, Data: runtime.RawExtension{Raw: tmpl}}
	byJob := pinCopy(t, key, configMap(ns, "job-only", map[string]string{"k": "1"}))
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly-1"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: podSpec(envFromObject(byJob), func(s *corev1.PodSpec) {
			s.RestartPolicy = corev1.RestartPolicyNever
		})}},
	}
	create(t, rs, revision, job)
	// A copy nothing names, and a tenant's look-alike: the annotations and
	// labels of a copy, immutable, with a signature taken from a real copy.
	unused := pinCopy(t, key, configMap(ns, "unused", map[string]string{"k": "1"}))
	lookAlike := configMap(ns, "unused-0123456789", map[string]string{"k": "forged"})
	lookAlike.Immutable = ptr.To(true)
	lookAlike.Labels = unused.GetLabels()
	lookAlike.Annotations = unused.GetAnnotations()
	create(t, lookAlike)

	// Positive first: the copy nothing names is deleted (after the grace).
	g.Eventually(func() bool { return exists(t, unused) }, pinGCWait).Should(gomega.BeFalse())
	g.Expect(metrics.CopiesDeletedCount("ConfigMap", ns)).To(gomega.Equal(1.0))
	// Never while something names a copy: the pod of the old ReplicaSet
	// (v1), the template (v2), the ReplicaSet, the ControllerRevision and
	// the Job; nor the look-alike. Over more than a period.
	inUse := []client.Object{v1, v2, byRS, byRevision, byJob, lookAlike}
	g.Consistently(func(g gomega.Gomega) {
		for _, c := range inUse {
			g.Expect(exists(t, c)).To(gomega.BeTrue(), "%s", c.GetName())
		}
	}, pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.Succeed())

	// Once none names them, each is deleted; the template's copy and the
	// look-alike stay.
	for _, o := range []client.Object{kept, rs, revision, job} {
		g.Expect(k8s.Delete(t.Context(), o, client.GracePeriodSeconds(0), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	}
	g.Eventually(func(g gomega.Gomega) {
		for _, c := range []client.Object{v1, byRS, byRevision, byJob} {
			g.Expect(exists(t, c)).To(gomega.BeFalse(), "%s", c.GetName())
		}
	}, 2*pingc.DefaultPeriod+30*time.Second, time.Second).Should(gomega.Succeed())
	g.Expect(exists(t, v2)).To(gomega.BeTrue())
	g.Expect(exists(t, lookAlike)).To(gomega.BeTrue(), "a tenant's look-alike is never deleted")

	// Deleting the workload gets its copy collected (copies have no
	// owners: once Kubernetes has deleted its ReplicaSets and pods, nothing
	// names it); the look-alike stays.
	g.Expect(k8s.Delete(t.Context(), d, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	g.Eventually(func() bool { return exists(t, v2) }, pinGCWait, time.Second).Should(gomega.BeFalse())
	g.Expect(exists(t, lookAlike)).To(gomega.BeTrue())
}

func TestPinGC_ConvergedOnceTheLastPodOnThePreviousVersionIsGone(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 34)
	r := startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})

	db := secret(ns, "db", map[string]string{"password": "one"})
	create(t, db)
	d := deployment(ns, "api", nil, podSpec())
	create(t, d)
	v1 := pinCopy(t, key, db)
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec = podSpec(envFromObject(v1)) })
	waitRolledOut(t, d)
	kept := keepOnePod(t, d)
	waitRolledOut(t, d)

	// The rotation: the Secret's new content, its copy, the Deployment
	// moved to it; one pod stays on the previous version.
	update(t, db, func(s *corev1.Secret) { s.Data = map[string][]byte{"password": []byte("two")} })
	v2 := pinCopy(t, key, secret(ns, "db", map[string]string{"password": "two"}))
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec = podSpec(envFromObject(v2)) })
	waitRolledOut(t, d)

	// Positive first: Reroll has recorded the previous version, with the
	// pods on it, and not converged.
	var rec pingc.Record
	g.Eventually(func() bool {
		var ok bool
		c := get(t, v1)
		rec, ok = pingc.ReadRecord(key, string(c.GetUID()), c.GetAnnotations())
		return ok
	}).Should(gomega.BeTrue())
	g.Expect(rec.Converged.IsZero()).To(gomega.BeTrue())
	g.Expect(rec.Pods).To(gomega.BeNumerically(">=", 1))
	// The workloads of those pods: the kept pod (released, its own), and
	// the Deployment when the record was made before its pods moved on.
	g.Expect(rec.Workloads).To(gomega.BeNumerically(">=", 1))
	g.Expect(rec.Workloads).To(gomega.BeNumerically("<=", min(rec.Pods, 2)))
	// Not before the last pod is gone: over more than a period.
	g.Consistently(func() []string { return eventsWithReason(t, ns, "db", pingc.ReasonConverged) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.BeEmpty())
	g.Expect(metrics.RotationsConvergedCount("Secret", ns)).To(gomega.BeZero())

	g.Expect(k8s.Delete(t.Context(), kept, client.GracePeriodSeconds(0))).To(gomega.Succeed())
	g.Eventually(func() []string { return eventsWithReason(t, ns, "db", pingc.ReasonConverged) },
		2*pingc.DefaultPeriod+30*time.Second).Should(gomega.HaveLen(1))
	msg := eventsWithReason(t, ns, "db", pingc.ReasonConverged)[0]
	g.Expect(msg).To(gomega.ContainSubstring(v1.GetName()))
	g.Expect(msg).To(gomega.ContainSubstring(fmt.Sprintf("%d workload(s)", rec.Workloads)))
	g.Expect(msg).NotTo(gomega.ContainSubstring("one"), "no value")
	g.Expect(metrics.RotationsConvergedCount("Secret", ns)).To(gomega.Equal(1.0))

	// A restart reads the record: no second Event. Positive first: the
	// new run has made a pass over the namespace after its grace (it
	// deletes a copy made unused just before it started, in the same pass
	// that reads the converged record).
	r.stop(t)
	probe := pinCopy(t, key, configMap(ns, "probe", map[string]string{"k": "1"}))
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
	g.Eventually(func() bool { return exists(t, probe) }, pinGCWait).Should(gomega.BeFalse())
	g.Expect(eventsWithReason(t, ns, "db", pingc.ReasonConverged)).To(gomega.HaveLen(1))
	g.Expect(metrics.RotationsConvergedCount("Secret", ns)).To(gomega.Equal(1.0))
}

// TestPinGC_ACopyItsTemplateNamesCostsNoRequest: in the steady state, where
// the workload's template names its copy, a pass over the namespace reads
// the copies from the store and the template from the cache: no request to
// the API server. Positive first: the pass happened (its log line).
func TestPinGC_ACopyItsTemplateNamesCostsNoRequest(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 35)
	counter := metrics.NewRequestCounter()
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(counter.Wrap)
	r := startRerollAs(t, cfg, ns, Options{PlanOptions: plan.Options{Key: key}})

	app := configMap(ns, "app", map[string]string{"k": "1"})
	create(t, app)
	d := deployment(ns, "web", nil, podSpec())
	create(t, d)
	v1 := pinCopy(t, key, app)
	update(t, d, func(d *appsv1.Deployment) { d.Spec.Template.Spec = podSpec(envFromObject(v1)) })
	waitRolledOut(t, d)
	passes := func() int { return strings.Count(r.logs.String(), "Looked at the copies of a namespace") }
	g.Eventually(passes).Should(gomega.BeNumerically(">=", 1))
	before := settled(t, counter)
	n := passes()

	// A data change of another object of the namespace wakes a pass.
	create(t, configMap(ns, "other", map[string]string{"k": "1"}))
	update(t, configMap(ns, "other", nil), func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "2"} })
	g.Eventually(passes).Should(gomega.BeNumerically(">", n))
	g.Expect(settled(t, counter)).To(gomega.Equal(before), "not one request")
	g.Expect(exists(t, v1)).To(gomega.BeTrue())
}

// TestPinGC_CollectsWhatPinningMadeBeyondTheRevisionHistory: with pinning
// itself making the copies (a versioned Deployment whose ConfigMap changes
// twice, revisionHistoryLimit 1), the copy of the first content, which no
// ReplicaSet names any more, is deleted; those of the kept ReplicaSet and
// of the template stay.
func TestPinGC_CollectsWhatPinningMadeBeyondTheRevisionHistory(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 36)
	contents := []map[string]string{{"color": "blue"}, {"color": "green"}, {"color": "red"}}
	src := configMap(ns, "app-config", contents[0])
	create(t, src)
	d := deployment(ns, "web", versionedOn, podSpec(envFrom("app-config")))
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	create(t, d)
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}})
	var names []string
	for i, c := range contents {
		if i > 0 {
			update(t, src, func(cm *corev1.ConfigMap) { cm.Data = c })
		}
		names = append(names, copyName(key, ns, "app-config", c))
		g.Eventually(func() []string { return templateNames(&get(t, d).Spec.Template) }).Should(gomega.Equal(names[i : i+1]))
		waitRolledOut(t, d)
	}
	g.Expect(copiesOf(t, ns, "app-config")).To(gomega.HaveLen(3))
	// Positive first: the first content's copy goes.
	g.Eventually(func() bool { _, ok := copiesOf(t, ns, "app-config")[names[0]]; return ok }, pinGCWait).Should(gomega.BeFalse())
	g.Consistently(func() []string { return slices.Sorted(maps.Keys(copiesOf(t, ns, "app-config"))) },
		pingc.DefaultPeriod+10*time.Second, time.Second).Should(gomega.ConsistOf(names[1], names[2]))
}

// TestPinGC_CollectsBesideAWorkloadKindTheAPIServerDoesNotServe: Reroll is
// told to handle a kind whose CRD is not installed (as Argo Rollouts is
// not, in most clusters); the collector reads only the kinds registered,
// so its pass succeeds and an unused copy is deleted. Before, every pass
// failed listing the missing kind ("no matches for kind") and no copy was
// ever collected.
func TestPinGC_CollectsBesideAWorkloadKindTheAPIServerDoesNotServe(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	key := testKey(t, 33)
	unserved, err := workload.ParseUnstructured("example.com/v1/Widget:spec.template")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	startReroll(t, ns, Options{PlanOptions: plan.Options{Key: key}, Kinds: append(workload.Builtin(), unserved)})

	app := configMap(ns, "app", map[string]string{"k": "1"})
	create(t, app)
	d := deployment(ns, "web", nil, podSpec())
	create(t, d)
	unused := pinCopy(t, key, app)
	g.Expect(exists(t, unused)).To(gomega.BeTrue(), "the copy was made")
	g.Eventually(func() bool { return exists(t, unused) }, pinGCWait, time.Second).Should(gomega.BeFalse(),
		"the copy nothing names is collected")
}
