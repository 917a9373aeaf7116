package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/validate"
	"github.com/reroll/reroll/internal/validator"
)

func TestValidation_AHeldChangeIsNotifiedOnceNamingTheObjectRuleAndKeyNeverTheValue(t *testing.T) {
	t.Parallel()
	installValidatorCRD(t)
	g := newT(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	ns := newNamespace(t)
	opts := validationOptions(t)
	opts.Alerter = notify.NewSender(notify.Config{Sink: notify.Webhook, URL: srv.URL})
	startReroll(t, ns, opts)
	v := &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindSecret, Names: []string{"creds"},
			Rules: []rerollv1alpha1.ValidationRule{{Name: "config-json", Key: "config.json", Format: rerollv1alpha1.FormatJSON}}},
	}
	create(t, v, secret(ns, "creds", map[string]string{"config.json": `{"password": "first-v4lue"}`}))
	g.Eventually(readyCondition(t, v)).Should(gomega.HaveField("Reason", validate.CondCompiled))
	d := deployment(ns, "app", autoOn, podSpec(envFrom("creds")))
	d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
	create(t, d)
	recorded(t, d)

	// Positive first: a valid change rolls, and its alert is a rollout's.
	update(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}, func(s *corev1.Secret) {
		s.Data["config.json"] = []byte(`{"password": "second-v4lue"}`)
	})
	g.Eventually(func() []string { return rolledEvents(t, ns, "app") }).Should(gomega.HaveLen(1))
	g.Eventually(received).Should(gomega.HaveLen(1))
	g.Expect(received()[0]).NotTo(gomega.ContainSubstring(`"invalid"`))

	// Invalid content: held, and one notification naming the object, the
	// rule and the key; no part of the value.
	const secretValue = "hunter2-zq8"
	update(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}, func(s *corev1.Secret) {
		s.Data["config.json"] = []byte(`{"password": "` + secretValue + `",}`)
	})
	g.Eventually(received).Should(gomega.HaveLen(2))
	var alert struct {
		Kind, Namespace, Name string
		Invalid               struct{ Findings []string }
		Text                  string
	}
	g.Expect(json.Unmarshal([]byte(received()[1]), &alert)).To(gomega.Succeed())
	g.Expect(alert.Kind).To(gomega.Equal("Deployment"))
	g.Expect(alert.Name).To(gomega.Equal("app"))
	g.Expect(alert.Invalid.Findings).To(gomega.ConsistOf(gomega.HavePrefix(`Secret/creds: creds/config-json: key "config.json" is not valid JSON`)))
	g.Expect(alert.Text).To(gomega.ContainSubstring("Reroll held Deployment " + ns + "/app"))
	g.Expect(received()[1]).NotTo(gomega.ContainSubstring(secretValue))
	g.Expect(received()[1]).NotTo(gomega.ContainSubstring("password"))
	g.Expect(pendingReason(t, d)).To(gomega.Equal(validator.HoldInvalid))
	// One per held change, however often the workload is reconciled.
	g.Consistently(received).Should(gomega.HaveLen(2))
	g.Expect(rolledEvents(t, ns, "app")).To(gomega.HaveLen(1))
}
