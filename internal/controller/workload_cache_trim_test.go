package controller

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/trigger"
)

// The third security review (M7): the workload cache kept whole pod
// templates, so ~200 Deployments with replicas: 0 and ~1 MB of env values
// each exceeded the chart's 256 Mi at every start. The cache now keeps a
// digest of each long env value; the writes, strategic merge patches
// between two cached copies, never carry the digest back: after a rollout
// by either strategy the API server's Deployment still holds the value.
func TestWorkloadReconciler_CacheKeepsNoLongEnvValues(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("v", 256<<10)
	for _, strategy := range []trigger.Strategy{trigger.Annotations, trigger.EnvVars} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
			d := deployment(ns, "web", reloaderAutoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "BIG", Value: big}, {Name: "SMALL", Value: "s"}}
			}))
			create(t, d)
			rr := startReroll(t, ns, Options{PlanOptions: plan.Options{Strategy: strategy}})
			recorded(t, d)

			cached := &appsv1.Deployment{}
			g.Expect(rr.cache.Get(t.Context(), client.ObjectKeyFromObject(d), cached)).To(gomega.Succeed())
			env := cached.Spec.Template.Spec.Containers[0].Env
			g.Expect(env[0].Value).To(gomega.HavePrefix(envtrim.Prefix), "the cache holds a digest of the long value")
			g.Expect(len(env[0].Value)).To(gomega.BeNumerically("<", 128))
			g.Expect(env[1].Value).To(gomega.Equal("s"), "a short value is kept")

			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
			g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
			cur := get(t, d)
			var names []string
			for _, e := range cur.Spec.Template.Spec.Containers[0].Env {
				names = append(names, e.Name)
				if e.Name == "BIG" {
					g.Expect(e.Value == big).To(gomega.BeTrue(), "the API server's Deployment still holds the long value (%d bytes)", len(e.Value))
				}
			}
			g.Expect(names).To(gomega.ContainElements("BIG", "SMALL"))
			if strategy == trigger.EnvVars {
				g.Expect(names).To(gomega.ContainElement(gomega.HavePrefix("STAKATER_")), "the trigger was written")
			} else {
				g.Expect(cur.Spec.Template.Annotations).NotTo(gomega.BeEmpty(), "the trigger was written")
			}
		})
	}
}

// patchBodies records the bodies of the PATCH requests to Deployments that
// pass through the transports it wraps.
type patchBodies struct {
	mu     sync.Mutex
	bodies []string
}

// wrap fits rest.Config.Wrap.
func (p *patchBodies) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/deployments/") && req.Body != nil {
			b, err := io.ReadAll(req.Body)
			_ = req.Body.Close()
			if err != nil {
				return nil, err
			}
			req.Body = io.NopCloser(bytes.NewReader(b))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			p.mu.Lock()
			p.bodies = append(p.bodies, string(b))
			p.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (p *patchBodies) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// Issue #36: the workload cache keeps of a Deployment only what Reroll
// reads (envtrim.Keep, scope.Transform). A rollout from such a copy must
// still leave every other field of the template as it was: several
// containers, an init container, images, resources, probes, ports,
// commands, labels and pod-level fields; and the revert.Sums held with the
// cached copy must never reach the API server.
func TestWorkloadReconciler_RolloutFromATrimmedCacheKeepsTheTemplate(t *testing.T) {
	t.Parallel()
	for _, strategy := range []trigger.Strategy{trigger.Annotations, trigger.EnvVars} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			ns := newNamespace(t)
			create(t, configMap(ns, "cfg", map[string]string{"a": "1"}), configMap(ns, "files", map[string]string{"f": "1"}))
			probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 7}
			res := corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			}
			d := deployment(ns, "web", reloaderAutoOn, podSpec(envFrom("cfg"), func(s *corev1.PodSpec) {
				web := &s.Containers[0]
				web.Command, web.Args = []string{"/web"}, []string{"--port=8080"}
				web.Resources, web.LivenessProbe, web.ReadinessProbe = res, probe, probe
				web.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
				web.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
				web.VolumeMounts = []corev1.VolumeMount{{Name: "files", MountPath: "/etc/files"}}
				s.Containers = append(s.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/proxy:3", Resources: res,
					Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}}})
				s.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:2", Command: []string{"true"}}}
				s.Volumes = []corev1.Volume{{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "files"}}}}}
				s.NodeSelector = map[string]string{"pool": "general"}
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
				s.TerminationGracePeriodSeconds = ptr.To[int64](17)
			}))
			d.Spec.Template.Labels["tier"] = "front"
			create(t, d)
			patches := &patchBodies{}
			cfg := rest.CopyConfig(plane.Config)
			cfg.Wrap(patches.wrap)
			rr := startRerollAs(t, cfg, ns, Options{PlanOptions: plan.Options{Key: testKey(t, 0x38), Strategy: strategy}})
			recorded(t, d)

			// Positive control: the cache holds the trimmed copy, with the
			// Sums of the full template.
			cached := &appsv1.Deployment{}
			g.Eventually(func() revert.Sums {
				g.Expect(rr.cache.Get(t.Context(), client.ObjectKeyFromObject(d), cached)).To(gomega.Succeed())
				return revert.HeldIn(cached)
			}).Should(gomega.Equal(revert.SumsOf(&get(t, d).Spec.Template)))
			g.Expect(cached.ManagedFields).To(gomega.HaveLen(1), "the Sums share the entry of the last write")
			g.Expect(cached.Spec.Template.Spec.Containers).To(gomega.HaveLen(2))
			g.Expect(cached.Spec.Template.Spec.Containers[0].Image).To(gomega.BeEmpty(), "the cache drops the image")
			g.Expect(cached.Spec.Template.Labels).To(gomega.BeEmpty(), "the cache drops the template's labels")
			g.Expect(cached.Spec.Template.Spec.Containers[0].EnvFrom).To(gomega.HaveLen(1), "the cache keeps the references")

			before := get(t, d).Spec.Template
			update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
			g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
			cur := get(t, d)
			after := cur.Spec.Template.DeepCopy()
			// The trigger is the only change: remove it, and the template is
			// the one before, field for field.
			if strategy == trigger.EnvVars {
				env := after.Spec.Containers[0].Env
				g.Expect(env).To(gomega.ContainElement(gomega.HaveField("Name", gomega.HavePrefix("STAKATER_"))), "the trigger was written")
				after.Spec.Containers[0].Env = slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "STAKATER_") })
			} else {
				g.Expect(after.Annotations).NotTo(gomega.BeEmpty(), "the trigger was written")
				after.Annotations = before.Annotations
			}
			g.Expect(equality.Semantic.DeepEqual(*after, before)).To(gomega.BeTrue(), "the rollout changed more than the trigger:\nbefore %+v\nafter  %+v", before, *after)
			for _, e := range cur.ManagedFields {
				g.Expect(e.Manager).NotTo(gomega.Or(gomega.Equal(revert.HeldManager), gomega.Equal(plan.SummaryManager)), "the held Sums reached the API server")
			}
			bodies := patches.all()
			g.Expect(bodies).To(gomega.ContainElement(gomega.ContainSubstring(`"template"`)), "the rollout's PATCH was recorded")
			for _, b := range bodies {
				g.Expect(b).NotTo(gomega.Or(gomega.ContainSubstring(revert.HeldManager), gomega.ContainSubstring(plan.SummaryManager), gomega.ContainSubstring("managedFields")), "a PATCH carries the held Sums")
				g.Expect(b).NotTo(gomega.ContainSubstring("registry.example"), "a PATCH from the trimmed copy writes an image")
			}
		})
	}
}
