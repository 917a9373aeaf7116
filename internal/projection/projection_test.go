package projection

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/reference"
)

const (
	accessKeyPath = "spec.storage.s3.accessKey"
	secretKeyPath = "spec.storage.s3.secretKeyBase64"
	endpointPath  = "spec.storage.s3.endpoint"
	digestPath    = `spec.template.metadata.annotations["example.com/s3-digest"]`
)

// harbor sets up a namespace like the Harbor example: a Secret s3 with two
// keys and one the Projection does not read, a ConfigMap endpoint, a
// ServiceAccount projector that may read them and write widgets, and the
// Widget "harbor". It returns the namespace and the Projection (not
// created) that writes all four kinds of value.
func harbor(t *testing.T) (string, *rerollv1alpha1.Projection) {
	t.Helper()
	ns := newNamespace(t)
	serviceAccount(t, ns, "projector", readSources, writeWidgets)
	create(t,
		secret(ns, "s3", map[string]string{"accessKey": "AK1", "secretKey": "SK1", "unused": "u1"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "endpoint"}, Data: map[string]string{"host": "minio.example"}},
		widget(ns, "harbor", map[string]any{"storage": map[string]any{"s3": map[string]any{"region": "eu-1"}}}),
	)
	p := projection(ns, "harbor-s3", "projector", "harbor",
		[]rerollv1alpha1.Source{secretKey("accessKey", "s3", "accessKey"), secretKey("secretKey", "s3", "secretKey"), configMapKey("host", "endpoint", "host")},
		rerollv1alpha1.Field{Path: accessKeyPath, Source: "accessKey"},
		rerollv1alpha1.Field{Path: secretKeyPath, Source: "secretKey", Encoding: rerollv1alpha1.EncodingBase64},
		rerollv1alpha1.Field{Path: endpointPath, Template: ptr.To("https://${host}:9000")},
		rerollv1alpha1.Field{Path: digestPath, DigestOf: []string{"secretKey"}},
	)
	return ns, p
}

// digestOf is the value a digestOf field of p holds for the values.
func digestOf(p *rerollv1alpha1.Projection, values map[string]string) string {
	in := map[string]sourceValue{}
	var names []string
	for k, v := range values {
		in[k] = sourceValue{value: []byte(v), present: true}
		names = append(names, k)
	}
	return keyedDigest(placeKey(runKey, p.Namespace, p.Name), in, names)
}

func TestProjection_WritesValueTemplateAndDigestIntoCustomResource(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	r := startProjections(t, ns, Options{})
	create(t, p)

	g.Eventually(func() map[string]string {
		w := getWidget(t, ns, "harbor")
		return map[string]string{
			accessKeyPath: field(t, w, accessKeyPath), secretKeyPath: field(t, w, secretKeyPath),
			endpointPath: field(t, w, endpointPath), digestPath: field(t, w, digestPath),
			"region": field(t, w, "spec.storage.s3.region"),
		}
	}).Should(gomega.Equal(map[string]string{
		accessKeyPath: "AK1", secretKeyPath: "U0sx", // base64("SK1")
		endpointPath: "https://minio.example:9000", digestPath: digestOf(p, map[string]string{"secretKey": "SK1"}),
		"region": "eu-1", // not projected: left alone
	}))
	g.Eventually(func() string { return condition(t, ns, "harbor-s3", ConditionReady).Reason }).Should(gomega.Equal(ReasonProjected))
	got := getProjection(t, ns, "harbor-s3")
	g.Expect(reason(got, ConditionSynced)).To(gomega.Equal(ReasonWritten))
	g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
	g.Expect(got.Status.LastWriteTime).NotTo(gomega.BeNil())
	g.Expect(got.Status.SourcesDigest).To(gomega.Equal(digestOf(p, map[string]string{"accessKey": "AK1", "secretKey": "SK1", "host": "minio.example"})))
	g.Expect(got.Status.Fields).To(gomega.ConsistOf(accessKeyPath, secretKeyPath, endpointPath, digestPath))
	g.Eventually(func() []string { return events(t, ns, "Projection", "harbor-s3", ReasonWritten) }).ShouldNot(gomega.BeEmpty())
	g.Eventually(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten) }).Should(
		gomega.ContainElement(gomega.ContainSubstring("Projection harbor-s3 wrote")))
	// The status holds no value, only keyed digests.
	g.Expect(strings.Join([]string{got.Status.SourcesDigest, conditionMessages(got)}, " ")).NotTo(gomega.Or(
		gomega.ContainSubstring("AK1"), gomega.ContainSubstring("SK1")))

	// Rotating the secret key changes its field and the digest, not the
	// access key.
	setSecretKey(t, ns, "s3", "secretKey", "SK2")
	g.Eventually(func() []string {
		w := getWidget(t, ns, "harbor")
		return []string{field(t, w, secretKeyPath), field(t, w, digestPath), field(t, w, accessKeyPath)}
	}).Should(gomega.Equal([]string{"U0sy", digestOf(p, map[string]string{"secretKey": "SK2"}), "AK1"}))
	// Only Reroll's field manager owns the projected fields.
	g.Expect(managers(getWidget(t, ns, "harbor"))).To(gomega.ContainElement(ManagerFor("harbor-s3")))
	// The manager's cache holds the Secret's digests, never its values: the
	// values were read on demand.
	cached, ok, err := r.store.Get(t.Context(), reference.Secret, ns, "s3")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(cached.Data().Keys).To(gomega.HaveKey("accessKey"))
	for _, v := range cached.Data().Keys {
		g.Expect(v).NotTo(gomega.Or(gomega.Equal("AK1"), gomega.Equal("SK2"), gomega.Equal("u1")))
	}
	g.Expect(fmt.Sprintf("%#v", cached)).NotTo(gomega.Or(gomega.ContainSubstring("AK1"), gomega.ContainSubstring("SK2")))
}

func TestProjection_KeyNotReadChangesNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	startProjections(t, ns, Options{})
	create(t, p)
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	g.Eventually(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten) }).Should(gomega.HaveLen(1))
	before := getWidget(t, ns, "harbor").GetResourceVersion()

	setSecretKey(t, ns, "s3", "unused", "u2")
	g.Consistently(func() string { return getWidget(t, ns, "harbor").GetResourceVersion() }).Should(gomega.Equal(before))
	// Positive check: a key it reads is still projected, after the change
	// above went through the same watch; and that is the only second write.
	setSecretKey(t, ns, "s3", "accessKey", "AK2")
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK2"))
	g.Eventually(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten) }).Should(gomega.HaveLen(2))
	g.Consistently(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonWritten) }).Should(gomega.HaveLen(2))
}

func TestProjection_ChangeWhileStoppedIsAppliedOnStart(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	first := startProjections(t, ns, Options{})
	create(t, p)
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	first.stop(t)

	setSecretKey(t, ns, "s3", "accessKey", "AK-while-down")
	// Nothing runs that could project it (no assertion: nothing could fail).
	startProjections(t, ns, Options{})
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK-while-down"))
}

func TestProjection_ServiceAccountThatMayNotReadTheSecretWritesNothing(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	// May write widgets and read ConfigMaps, not Secrets.
	serviceAccount(t, ns, "no-secrets", writeWidgets,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	p.Spec.ServiceAccountName = "no-secrets"
	startProjections(t, ns, Options{})
	create(t, p)

	g.Eventually(func() metav1.Condition { return condition(t, ns, "harbor-s3", ConditionReady) }).Should(gomega.And(
		gomega.HaveField("Status", metav1.ConditionFalse),
		gomega.HaveField("Reason", ReasonForbidden),
		gomega.HaveField("Message", gomega.ContainSubstring("ServiceAccount "+ns+"/no-secrets may not get secrets")),
	))
	g.Expect(condition(t, ns, "harbor-s3", ConditionSynced).Status).To(gomega.Equal(metav1.ConditionFalse))
	g.Eventually(func() []string { return events(t, ns, "Projection", "harbor-s3", ReasonForbidden) }).ShouldNot(gomega.BeEmpty())
	w := getWidget(t, ns, "harbor")
	g.Expect(field(t, w, accessKeyPath)).To(gomega.BeEmpty())
	g.Expect(managers(w)).NotTo(gomega.ContainElement(ManagerFor("harbor-s3")))
}

func TestProjection_ConflictingWriterIsDetected(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	p.Spec.Interval = &metav1.Duration{Duration: time.Second}
	// The test's interval of 1s, under the default minimum of 30s.
	startProjections(t, ns, Options{Conflict: ConflictLimits{Rewrites: 2, Window: 10 * time.Minute}, MinInterval: time.Second})
	create(t, p)
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))

	// A GitOps tool that owns the same field writes its value back each
	// time Reroll wrote the projected one.
	g.Eventually(func() string {
		w := getWidget(t, ns, "harbor")
		if field(t, w, accessKeyPath) == "AK1" {
			g.Expect(unstructured.SetNestedField(w.Object, "from-git", "spec", "storage", "s3", "accessKey")).To(gomega.Succeed())
			// Omitted, managedFields are kept and this write's ownership
			// recorded, as for any client that does not send them.
			w.SetManagedFields(nil)
			_ = k8s.Update(t.Context(), w, client.FieldOwner("argocd-controller"))
		}
		return condition(t, ns, "harbor-s3", ConditionReady).Reason
	}).Should(gomega.Equal(ReasonConflict))
	got := getProjection(t, ns, "harbor-s3")
	g.Expect(reason(got, ConditionReady)).To(gomega.Equal(ReasonConflict))
	g.Expect(conditionMessages(got)).To(gomega.ContainSubstring(`field manager "argocd-controller" rewrote ` + accessKeyPath + " 3 times"))
	g.Expect(got.Status.Conflict).To(gomega.HaveField("Count", int32(3)))
	g.Eventually(func() []string { return events(t, ns, widgetGVK.Kind, "harbor", ReasonConflict) }).ShouldNot(gomega.BeEmpty())
	// Stopped: the other writer's value stays.
	g.Consistently(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("from-git"))
}

func TestProjection_MissingTargetIsFilledWhenItAppears(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	p.Spec.Target.Name = "later"
	startProjections(t, ns, Options{})
	create(t, p)
	g.Eventually(func() string { return condition(t, ns, "harbor-s3", ConditionReady).Reason }).Should(gomega.Equal(ReasonTargetNotFound))

	create(t, widget(ns, "later", map[string]any{}))
	g.Eventually(func() string { return field(t, getWidget(t, ns, "later"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	g.Eventually(func() string { return condition(t, ns, "harbor-s3", ConditionReady).Reason }).Should(gomega.Equal(ReasonProjected))
}

func TestProjection_PruneRemovesItsFieldsOnDelete(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns, p := harbor(t)
	p.Spec.Prune = true
	startProjections(t, ns, Options{})
	create(t, p)
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.Equal("AK1"))
	g.Expect(getProjection(t, ns, "harbor-s3").Finalizers).To(gomega.ContainElement(Finalizer))

	g.Expect(k8s.Delete(t.Context(), p)).To(gomega.Succeed())
	g.Eventually(func() string { return field(t, getWidget(t, ns, "harbor"), accessKeyPath) }).Should(gomega.BeEmpty())
	w := getWidget(t, ns, "harbor")
	g.Expect(field(t, w, "spec.storage.s3.region")).To(gomega.Equal("eu-1"))
	g.Expect(field(t, w, digestPath)).To(gomega.BeEmpty())
}

func TestProjection_SpecMistakesAreRefusedOnWrite(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ok := func() *rerollv1alpha1.Projection {
		return projection(ns, "p", "", "w", []rerollv1alpha1.Source{secretKey("a", "s", "k")}, rerollv1alpha1.Field{Path: "spec.x", Source: "a"})
	}
	cases := map[string]struct {
		mutate func(*rerollv1alpha1.Projection) // the mistake
		want   string                           // part of the API server's refusal
	}{
		"two values":     {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Template = ptr.To("x") }, want: "set exactly one of source, template and digestOf"},
		"no value":       {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Source = "" }, want: "set exactly one of source, template and digestOf"},
		"unknown source": {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Source = "b" }, want: "fields[].source must name an entry of sources"},
		"unknown digestOf": {mutate: func(p *rerollv1alpha1.Projection) {
			p.Spec.Fields[0] = rerollv1alpha1.Field{Path: "spec.x", DigestOf: []string{"b"}}
		}, want: "digestOf must name entries of sources"},
		"encoding of template": {mutate: func(p *rerollv1alpha1.Projection) {
			p.Spec.Fields[0] = rerollv1alpha1.Field{Path: "spec.x", Template: ptr.To("${a}"), Encoding: rerollv1alpha1.EncodingBase64}
		}, want: "encoding applies to source only"},
		"both refs": {mutate: func(p *rerollv1alpha1.Projection) {
			p.Spec.Sources[0].ConfigMapKeyRef = &rerollv1alpha1.KeySelector{Name: "c", Key: "k"}
		}, want: "set exactly one of secretKeyRef and configMapKeyRef"},
		"status path":       {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Path = "status.x" }, want: "path may not be apiVersion, kind or status"},
		"metadata name":     {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Path = "metadata.name" }, want: "in metadata, path may only be an annotation or a label"},
		"malformed path":    {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Fields[0].Path = "spec..x" }, want: "spec.fields[0].path"},
		"duplicate sources": {mutate: func(p *rerollv1alpha1.Projection) { p.Spec.Sources = append(p.Spec.Sources, p.Spec.Sources[0]) }, want: "Duplicate value"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := ok()
			c.mutate(p)
			err := k8s.Create(t.Context(), p)
			newT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring(c.want)))
		})
	}
	// The unchanged spec is accepted, and its target cannot change.
	g := newT(t)
	p := ok()
	create(t, p)
	p.Spec.Target.Name = "other"
	g.Expect(k8s.Update(t.Context(), p)).To(gomega.MatchError(gomega.ContainSubstring("target is immutable")))
	g.Expect(getProjection(t, ns, "p").Spec.Interval).To(gomega.Equal(&metav1.Duration{Duration: 10 * time.Minute}))
}

// reason returns the reason of the Projection's condition of type.
func reason(p *rerollv1alpha1.Projection, typ string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Reason
		}
	}
	return ""
}

func conditionMessages(p *rerollv1alpha1.Projection) string {
	var out []string
	for _, c := range p.Status.Conditions {
		out = append(out, c.Message)
	}
	return strings.Join(out, "\n")
}

// managers returns the field managers in obj's managedFields.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}
