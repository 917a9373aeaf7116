package controller

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// argoRolloutsVersion is the argo-rollouts module whose Rollout CRD the
// tests install; the module zip carries its manifests.
const argoRolloutsVersion = "v1.8.3"

var crdOnce sync.Map // CRD name -> *sync.Once

// installCRD creates crd once per test binary and waits until it is
// established.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	g := newT(t)
	once, _ := crdOnce.LoadOrStore(crd.Name, &sync.Once{})
	once.(*sync.Once).Do(func() {
		if err := k8s.Create(t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	})
	g.Eventually(func() bool {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: crd.Name}, cur); err != nil {
			return false
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}).Should(gomega.BeTrue())
	// Established is not yet served by discovery: wait until the tests'
	// client maps the kind, or its first create can fail with "no matches
	// for kind".
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	g.Eventually(func() error {
		_, err := k8s.RESTMapper().RESTMapping(gk, crd.Spec.Versions[0].Name)
		return err
	}).Should(gomega.Succeed())
}

// argoRolloutCRD reads the Rollout CRD from the argo-rollouts module,
// downloading it into the module cache when needed.
func argoRolloutCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", "github.com/argoproj/argo-rollouts@"+argoRolloutsVersion)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("downloading argo-rollouts %s for its CRD: %v", argoRolloutsVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("reading `go mod download` output %q: %v", out, err)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "manifests", "crds", "rollout-crd.yaml"))
	if err != nil {
		t.Fatalf("reading the Rollout CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatalf("decoding the Rollout CRD: %v", err)
	}
	return crd
}

// looseCRD is a namespaced CRD whose spec accepts anything, standing in for
// OpenShift's DeploymentConfig and for operators' custom resources.
func looseCRD(group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// customObject builds an unstructured object of kind with the given spec.
func customObject(t *testing.T, k workload.Unstructured, ns, name string, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	o := k.New().(*unstructured.Unstructured)
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetAnnotations(annotations)
	o.Object["spec"] = spec
	return o
}

// templateSpec returns a pod template, as unstructured data, that reads
// ConfigMap cfg through envFrom.
func templateSpec(t *testing.T, labels map[string]string) map[string]any {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(envFrom("cfg"))}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rolloutSpec returns the spec of an Argo Rollout whose pods read ConfigMap
// cfg (templateSpec), labelled app=name.
func rolloutSpec(t *testing.T, name string) map[string]any {
	t.Helper()
	return map[string]any{
		"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": templateSpec(t, map[string]string{"app": name}),
		"strategy": map[string]any{"canary": map[string]any{}},
	}
}

func templateAnnotations(t *testing.T, o *unstructured.Unstructured) map[string]string {
	t.Helper()
	cur := o.DeepCopy()
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(o), cur)).To(gomega.Succeed())
	a, _, _ := unstructured.NestedStringMap(cur.Object, "spec", "template", "metadata", "annotations")
	return a
}

func TestWorkloadReconciler_ArgoRollout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installCRD(t, argoRolloutCRD(t))
	ns := newNamespace(t)
	argo := workload.ArgoRollout()
	startReroll(t, ns, Options{Kinds: []workload.Kind{argo}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	byTemplate := customObject(t, argo, ns, "by-template", autoOn, rolloutSpec(t, "by-template"))
	byRestart := customObject(t, argo, ns, "by-restart", map[string]string{"reroll.dev/auto": "true", workload.RolloutStrategyAnnotation: "restart"}, rolloutSpec(t, "by-restart"))
	// A Rollout whose pods come from a Deployment's template (workloadRef):
	// the change goes to that template, which Argo watches.
	target := deployment(ns, "ref-target", nil, podSpec(envFrom("cfg")))
	target.Spec.Replicas = ptr.To[int32](0)
	byRef := customObject(t, argo, ns, "by-ref", autoOn, map[string]any{
		"replicas":    int64(1),
		"selector":    map[string]any{"matchLabels": map[string]any{"app": "ref-target"}},
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "ref-target"},
	})
	create(t, byTemplate, byRestart, target, byRef)
	recorded(t, byTemplate)
	recorded(t, byRestart)
	recorded(t, byRef)
	g.Expect(get(t, byRef).GetAnnotations()[ObservedAnnotation]).To(gomega.ContainSubstring("ConfigMap/cfg"), "references come from the Deployment's template")

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"only": "labels"} })
	g.Consistently(func() map[string]string { return templateAnnotations(t, byTemplate) }).ShouldNot(gomega.HaveKey(trigger.ConfigHashAnnotation))

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() map[string]string { return templateAnnotations(t, byTemplate) }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() string {
		s, _, _ := unstructured.NestedString(get(t, byRestart).Object, "spec", "restartAt")
		return s
	}).ShouldNot(gomega.BeEmpty())
	restartAt, _, _ := unstructured.NestedString(get(t, byRestart).Object, "spec", "restartAt")
	_, err := time.Parse(time.RFC3339, restartAt)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(templateAnnotations(t, byRestart)).NotTo(gomega.HaveKey(trigger.ConfigHashAnnotation), "restart leaves the template alone")
	g.Eventually(func() []string { return rolledEvents(t, ns, "by-restart") }).Should(gomega.ConsistOf(gomega.ContainSubstring("set spec.restartAt")))
	g.Eventually(func() map[string]string { return get(t, target).Spec.Template.Annotations }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() []string { return rolledEvents(t, ns, "by-ref") }).Should(gomega.ConsistOf(gomega.ContainSubstring("the Rollout's workloadRef")))
}

func TestWorkloadReconciler_DeploymentConfigAndCustomResources(t *testing.T) {
	t.Parallel()
	g := newT(t)
	installCRD(t, looseCRD("apps.openshift.io", "DeploymentConfig", "deploymentconfigs"))
	installCRD(t, looseCRD("example.reroll.dev", "Widget", "widgets"))
	installCRD(t, looseCRD("example.reroll.dev", "Database", "databases"))
	dc := workload.DeploymentConfig()
	widget, err := workload.ParseUnstructured("example.reroll.dev/v1/Widget:spec.podTemplate")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	database, err := workload.ParseUnstructured("example.reroll.dev/v1/Database:annotations=spec.podAnnotations")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ns := newNamespace(t)
	startReroll(t, ns, Options{Kinds: []workload.Kind{dc, widget, database}})
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))

	d := customObject(t, dc, ns, "dc", autoOn, map[string]any{"replicas": int64(1), "template": templateSpec(t, map[string]string{"app": "dc"})})
	w := customObject(t, widget, ns, "widget", autoOn, map[string]any{"size": "large", "podTemplate": templateSpec(t, nil)})
	optedOut := customObject(t, widget, ns, "opted-out", nil, map[string]any{"podTemplate": templateSpec(t, nil)})
	// An operator's resource without a pod template: it opts in with an
	// explicit list, and the trigger goes into the map its operator copies
	// onto pods.
	db := customObject(t, database, ns, "db", map[string]string{"reroll.dev/configmaps": "cfg"}, map[string]any{"version": "16"})
	create(t, d, w, optedOut, db)
	recorded(t, d)
	recorded(t, w)
	recorded(t, db)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" })
	g.Eventually(func() map[string]string { return templateAnnotations(t, d) }).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() map[string]string {
		a, _, _ := unstructured.NestedStringMap(get(t, w).Object, "spec", "podTemplate", "metadata", "annotations")
		return a
	}).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	g.Eventually(func() map[string]string {
		a, _, _ := unstructured.NestedStringMap(get(t, db).Object, "spec", "podAnnotations")
		return a
	}).Should(gomega.HaveKey(trigger.ConfigHashAnnotation))
	// Only what Reroll changes was written: the rest of the spec is intact.
	g.Expect(get(t, w).Object["spec"]).To(gomega.HaveKeyWithValue("size", "large"))
	g.Expect(get(t, db).Object["spec"]).To(gomega.HaveKeyWithValue("version", "16"))
	g.Expect(get(t, optedOut).GetAnnotations()).NotTo(gomega.HaveKey(ObservedAnnotation))
}

func TestWorkloadReconciler_SkipsKindsTheServerDoesNotServe(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	missing, err := workload.ParseUnstructured("nowhere.reroll.dev/v1/Ghost:spec.template")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// The Deployment controller still works beside a kind that is not served.
	startReroll(t, ns, Options{Kinds: []workload.Kind{missing, workload.Deployment{}}})
	expectDeploymentRolls(t, ns)
}
