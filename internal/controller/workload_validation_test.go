package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/validate"
	"github.com/reroll/reroll/internal/validator"
)

func init() {
	utilruntime.Must(rerollv1alpha1.AddToScheme(scheme))
}

var validatorCRD sync.Once

// installValidatorCRD creates the Validator CRD of config/crd, once for the
// package, and waits until it is served.
func installValidatorCRD(t *testing.T) {
	t.Helper()
	g := newT(t)
	validatorCRD.Do(func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "validators", "reroll.dev_validators.yaml"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(yaml.Unmarshal(b, &crd)).To(gomega.Succeed())
		if err := k8s.Create(t.Context(), &crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the Validator CRD: %v", err)
		}
	})
	g.Eventually(func() error {
		return k8s.List(t.Context(), &rerollv1alpha1.ValidatorList{})
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
}

// validationOptions are Reroll's options as it ships for validation: on,
// under a real installation key.
func validationOptions(t *testing.T) Options {
	return Options{Validate: true, PlanOptions: plan.Options{Key: testKey(t, 34), Recheck: time.Second}}
}

// jsonValidator is a Validator in ns: key config.json of ConfigMap name
// must be JSON.
func jsonValidator(ns, name string) *rerollv1alpha1.Validator {
	return &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{name},
			Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON}}},
	}
}

// readyCondition is the Validator's Ready condition once observed at its
// generation.
func readyCondition(t *testing.T, v *rerollv1alpha1.Validator) func() *metav1.Condition {
	return func() *metav1.Condition {
		cur := &rerollv1alpha1.Validator{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(v), cur); err != nil || cur.Status.ObservedGeneration != cur.Generation {
			return nil
		}
		return meta.FindStatusCondition(cur.Status.Conditions, validator.ConditionReady)
	}
}

func TestValidation_InvalidJSONRollsNothingAndTheNextValidContentRollsOnce(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, validationOptions(t))
	v := jsonValidator(ns, "app-config")
	create(t, v, configMap(ns, "app-config", map[string]string{"config.json": `{"level": "info"}`}))
	d := deployment(ns, "app", autoOn, podSpec(envFrom("app-config")))
	create(t, d)
	recorded(t, d)
	g.Eventually(readyCondition(t, v)).Should(gomega.HaveField("Reason", validate.CondCompiled))

	// Positive first: valid content rolls, once.
	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"level": "debug"}` })
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
	before := metrics.InvalidContentCount("ConfigMap", ns)

	// A stray comma: nothing rolls, and both objects say why.
	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"level": "warn",}` })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(gomega.And(
		gomega.ContainSubstring("Held, nothing rolls"), gomega.ContainSubstring(`app-config/config-json: key "config.json" is not valid JSON`))))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app-config", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring(`ConfigMap/app-config changed to content that fails validation: app-config/config-json: key "config.json" is not valid JSON`)))
	g.Expect(pendingReason(t, d)).To(gomega.Equal(validator.HoldInvalid))
	g.Expect(metrics.InvalidContentCount("ConfigMap", ns)).To(gomega.BeNumerically(">", before))
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))

	// Valid again: it rolls, once.
	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"level": "warn"}` })
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(2))
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(2))
	g.Expect(pendingReason(t, d)).To(gomega.BeEmpty())
}

func TestValidation_ACELRuleOverTheCostLimitIsRefusedAndACheapOneEvaluates(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, validationOptions(t))
	cheap := &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cheap"},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{"cfg"},
			Rules: []rerollv1alpha1.ValidationRule{{Name: "replicas", Expression: "yaml(data['app.yaml']).replicas <= 10", Message: "replicas must be at most 10"}}},
	}
	costly := cheap.DeepCopy()
	costly.Name = "costly"
	costly.Spec.Rules[0].Expression = "data.all(k, data.all(j, data[k] == data[j]))"
	create(t, cheap, costly, configMap(ns, "cfg", map[string]string{"app.yaml": "replicas: 3\n"}))
	d := deployment(ns, "app", autoOn, podSpec(envFrom("cfg")))
	create(t, d)
	recorded(t, d)

	g.Eventually(readyCondition(t, cheap)).Should(gomega.And(gomega.HaveField("Status", metav1.ConditionTrue), gomega.HaveField("Reason", validate.CondCompiled)))
	g.Eventually(readyCondition(t, costly)).Should(gomega.And(gomega.HaveField("Status", metav1.ConditionFalse),
		gomega.HaveField("Reason", validate.CondCostExceeded), gomega.HaveField("Message", gomega.ContainSubstring("rule replicas: the expression's estimated cost"))))

	// The cheap rule evaluates: in range rolls, out of range is held.
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["app.yaml"] = "replicas: 10\n" })
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["app.yaml"] = "replicas: 11\n" })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring("cheap/replicas: replicas must be at most 10")))
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
}

// selfSigned returns a PEM certificate valid from notBefore to notAfter and
// its PEM private key.
func selfSigned(t *testing.T, notBefore, notAfter time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "app.example"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

func TestValidation_AnExpiredCertificateIsHeldAndNothingQuotesTheSecret(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	r := startReroll(t, ns, validationOptions(t))
	now := time.Now()
	v := &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindSecret, Names: []string{"tls"},
			Rules: []rerollv1alpha1.ValidationRule{
				{Name: "tls-crt", Key: "tls.crt", Format: rerollv1alpha1.FormatPEMCertificate, NotExpiringWithin: &metav1.Duration{Duration: 7 * 24 * time.Hour}},
				{Name: "tls-key", Key: "tls.key", Format: rerollv1alpha1.FormatPEMPrivateKey},
			}},
	}
	crt, key := selfSigned(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	s := secret(ns, "tls", map[string]string{"tls.crt": crt, "tls.key": key})
	s.Type = corev1.SecretTypeTLS
	create(t, v, s)
	d := deployment(ns, "app", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}
	}))
	create(t, d)
	recorded(t, d)
	g.Eventually(readyCondition(t, v)).Should(gomega.HaveField("Reason", validate.CondCompiled))

	// Positive first: a renewed certificate rolls.
	crt, key = selfSigned(t, now.Add(-time.Hour), now.Add(60*24*time.Hour))
	update(t, secret(ns, "tls", nil), func(s *corev1.Secret) { s.Data = map[string][]byte{"tls.crt": []byte(crt), "tls.key": []byte(key)} })
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))

	// An expired one is held.
	expired, expiredKey := selfSigned(t, now.Add(-48*time.Hour), now.Add(-time.Hour))
	update(t, secret(ns, "tls", nil), func(s *corev1.Secret) {
		s.Data = map[string][]byte{"tls.crt": []byte(expired), "tls.key": []byte(expiredKey)}
	})
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring(`tls/tls-crt: key "tls.crt" holds a certificate that expired at`)))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "tls", validator.ReasonInvalidContent) }).ShouldNot(gomega.BeEmpty())
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))

	// Nothing Reroll said carries a piece of the Secret's values: no
	// 12-character run of any PEM body in an Event of the namespace or in
	// Reroll's log.
	var said strings.Builder
	var events corev1.EventList
	g.Expect(k8s.List(t.Context(), &events, client.InNamespace(ns))).To(gomega.Succeed())
	for _, e := range events.Items {
		said.WriteString(e.Message + "\n")
	}
	said.WriteString(r.logs.String())
	g.Expect(said.String()).To(gomega.ContainSubstring("InvalidContent"), "the log and Events were read")
	for _, value := range []string{expired, expiredKey, crt, key} {
		body := strings.Join(strings.Split(value, "\n")[1:], "")
		for i := 0; i+12 <= len(body)-40; i += 6 {
			if strings.Contains(said.String(), body[i:i+12]) {
				t.Fatalf("a piece of the Secret's value, %q, is in Reroll's Events or log", body[i:i+12])
			}
		}
	}
}

func TestValidation_AnInvalidCopyHoldsTheWholeChangeSetBeforeItsFirstWave(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	// A canary namespace in wave -1 and a production one in wave 0, with
	// copies of ConfigMap cfg; only production has a Validator for it.
	f := newFleetWith(t, func(o *Options) { o.Validate = true })
	v := jsonValidator(f.prodNS, "cfg")
	v.Spec.Rules[0].Key = "level"
	create(t, v)
	g.Eventually(readyCondition(t, v)).Should(gomega.HaveField("Reason", validate.CondCompiled))

	// Positive first: valid JSON rolls both, canary first.
	replicate(t, map[string]string{"level": `"debug"`}, f.canaryNS, f.prodNS)
	g.Eventually(func() []string { return rolledEvents(t, f.prodNS, "web") }).WithTimeout(30 * time.Second).Should(gomega.HaveLen(1))
	g.Expect(rolledEvents(t, f.canaryNS, "web")).To(gomega.HaveLen(1))

	// Invalid JSON in both copies: the production copy fails its rule, and
	// the canary, first wave, rolls nothing either.
	replicate(t, map[string]string{"level": `debug`}, f.canaryNS, f.prodNS)
	g.Eventually(func() []string { return eventsWithReason(t, f.canaryNS, "web", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring("ConfigMap/cfg in namespace " + f.prodNS + " (the same change set)")))
	g.Eventually(func() []string { return eventsWithReason(t, f.prodNS, "web", validator.ReasonInvalidContent) }).ShouldNot(gomega.BeEmpty())
	g.Consistently(func() []string {
		return append(rolledEvents(t, f.canaryNS, "web"), rolledEvents(t, f.prodNS, "web")...)
	}).Should(gomega.HaveLen(2))
}

// TestValidation_TheDocsFirstExampleAsItIs applies examples/validate.yaml
// (docs/validation.md's first example) in a namespace, as a user would.
func TestValidation_TheDocsFirstExampleAsItIs(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, validationOptions(t))
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "validate.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var kinds []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(gomega.Succeed())
		g.Expect(u.GetNamespace()).To(gomega.BeEmpty(), "the example names no namespace")
		u.SetNamespace(ns)
		g.Expect(k8s.Create(t.Context(), u)).To(gomega.Succeed())
		kinds = append(kinds, u.GetKind())
	}
	g.Expect(kinds).To(gomega.ConsistOf("Validator", "ConfigMap", "Deployment"))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	recorded(t, d)
	g.Eventually(readyCondition(t, &rerollv1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"}})).
		Should(gomega.HaveField("Reason", validate.CondCompiled))

	// Invalid JSON: nothing rolls, the Event says why.
	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"logLevel": "debug",}` })
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app", validator.ReasonInvalidContent) }).Should(gomega.ContainElement(
		gomega.ContainSubstring(`app-config/config-json: key "config.json" is not valid JSON`)))
	g.Eventually(func() []string { return eventsWithReason(t, ns, "app-config", validator.ReasonInvalidContent) }).ShouldNot(gomega.BeEmpty())
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.BeEmpty())

	// Other valid JSON: app rolls once.
	update(t, configMap(ns, "app-config", nil), func(cm *corev1.ConfigMap) { cm.Data["config.json"] = `{"logLevel": "debug"}` })
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
	g.Consistently(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
}
