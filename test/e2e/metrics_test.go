//go:build e2e

package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The security review found /metrics unauthenticated on every interface.
// With --metrics-secure (as config/ runs it; the chart adds
// --metrics-token-secret) Reroll serves HTTPS and answers only clients the
// API server authenticates and authorizes for GET /metrics, as kubebuilder's
// default setup does.
func TestMetrics_ServedOnlyToAuthorizedClients(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t, "e2e-metrics-", nil)
	// In its own namespace only: the test runs beside another test's Reroll,
	// and two Rerolls with different digest keys would record each other's
	// workloads again and again, rolling none.
	p := startRerollAsShipped(t, plane.Kubeconfig, []string{"--metrics-secure=true", "--digest-key-namespace=" + ns, "--namespaces=" + ns}, map[string]string{"POD_NAMESPACE": ns, "POD_NAME": "reroll-e2e"})

	token := func(sa string) string {
		g.Expect(k8s.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(gomega.Succeed())
		tok, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return tok.Status.Token
	}
	reader, stranger := token("scraper"), token("stranger")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	g.Expect(k8s.Create(t.Context(), role)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), role) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}},
	}
	g.Expect(k8s.Create(t.Context(), binding)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), binding) })

	// fetch returns the status and body of GET url with the bearer token,
	// or the error of a request that got no answer.
	fetch := func(url, bearer string) (int, string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed certificate
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// get is fetch that fails the test on a request with no answer.
	get := func(url, bearer string) (int, string) {
		code, body, err := fetch(url, bearer)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return code, body
	}
	secure := "https://" + p.metricsAddr + "/metrics"
	// Positive control: an authorized scraper reads Reroll's metrics (the
	// binding may take a moment to reach the authorizer's cache; the secure
	// server starts after its authentication and authorization clients, so
	// the first dials may be refused).
	g.Eventually(func(g gomega.Gomega) int {
		code, _, err := fetch(secure, reader)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return code
	}).Should(gomega.Equal(http.StatusOK))
	_, body := get(secure, reader)
	g.Expect(body).To(gomega.ContainSubstring("controller_runtime_reconcile_total"))

	code, _ := get(secure, "")
	g.Expect(code).To(gomega.Equal(http.StatusUnauthorized), "no token")
	code, _ = get(secure, stranger)
	g.Expect(code).To(gomega.Equal(http.StatusForbidden), "a token without the permission")
	code, body = get("http://"+p.metricsAddr+"/metrics", "")
	g.Expect(code).To(gomega.Equal(http.StatusBadRequest), "plain HTTP")
	g.Expect(strings.Contains(body, "controller_runtime")).To(gomega.BeFalse())
}
