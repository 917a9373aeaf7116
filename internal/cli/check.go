package cli

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"

	"github.com/reroll/reroll/internal/version"
)

// ErrCheckFailed is returned by `check` when a check failed (exit 1).
var ErrCheckFailed = errors.New("some checks failed")

// certWarnBefore is how long before its expiry a webhook certificate is
// reported: Reroll renews its self-signed ones 90 days before.
const certWarnBefore = 30 * 24 * time.Hour

// checkResult is the outcome of one check.
type checkResult struct {
	Check string `json:"check"`
	// Result is "ok", "warning" or "failed".
	Result string `json:"result"`
	Detail string `json:"detail"`
}

// checkReport is `check`'s answer.
type checkReport struct {
	Checks []checkResult `json:"checks"`
	Failed bool          `json:"failed"`
}

func newCheck(o *Options) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an installation of Reroll: controller running and ready, RBAC, CRDs, webhook certificate, versions",
		Long: `check finds Reroll's Deployment (--reroll-namespace, else by label in every namespace) and
checks, like flux check: the controller is running and ready; its ServiceAccount may do what
Reroll needs (SubjectAccessReview); the Projection CRD is installed when Projections are on;
the admission webhook's CA bundle and serving certificate are valid and not about to expire
when the webhook is on; the plugin's version matches the controller's; the API server's
version. It exits 1 when a check failed. It needs to create SubjectAccessReviews and read
the controller's Deployment, the CRD, the webhook configuration and its certificate Secret.`,
		Example: `  kubectl reroll check
  kubectl reroll check --reroll-namespace reloader -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := *out.flags.OutputFormat; f != "" && f != "json" && f != "yaml" {
				return fmt.Errorf("check prints a table, json or yaml; not -o %s", f)
			}
			if err := out.validate(); err != nil {
				return err
			}
			s, err := newSession(o)
			if err != nil {
				return err
			}
			r := s.check(cmd.Context(), time.Now())
			if out.table() {
				err = r.write(o.Out)
			} else {
				err = out.print(o.Out, "Check", r)
			}
			if err != nil {
				return err
			}
			if r.Failed {
				return ErrCheckFailed
			}
			return nil
		},
	}
	out = newOutput(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: json or yaml; a table by default."
	return cmd
}

// check runs every check at now.
func (s *session) check(ctx context.Context, now time.Time) checkReport {
	var r checkReport
	add := func(check, result, detail string) {
		r.Checks = append(r.Checks, checkResult{Check: check, Result: result, Detail: detail})
		r.Failed = r.Failed || result == "failed"
	}
	if dc, err := discovery.NewDiscoveryClientForConfig(s.config); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			add("kubernetes", "ok", "API server "+v.GitVersion)
		} else {
			add("kubernetes", "warning", "could not read the API server's version: "+err.Error())
		}
	}
	c, err := findController(ctx, s.client, s.opts.RerollNamespace, s.opts.RerollSelector)
	if err != nil {
		add("controller", "failed", err.Error())
		return r
	}
	dep := "Deployment " + c.Namespace + "/" + c.Name
	switch {
	case c.Replicas == 0:
		add("controller", "failed", dep+" is scaled to 0: nothing rolls")
	case c.Ready == 0:
		add("controller", "failed", fmt.Sprintf("%s: no replica of %d is ready (kubectl -n %s describe deployment %s)", dep, c.Replicas, c.Namespace, c.Name))
	case c.Ready < c.Replicas:
		add("controller", "warning", fmt.Sprintf("%s: %d of %d replicas ready", dep, c.Ready, c.Replicas))
	default:
		add("controller", "ok", fmt.Sprintf("%s: %d of %d replicas ready, image %s", dep, c.Ready, c.Replicas, c.Image))
	}
	client := version.Get().Version
	if w := skew(client, &serverVersion{Deployment: c.Namespace + "/" + c.Name, Image: c.Image, Version: c.Version}); len(w) > 0 {
		add("versions", "warning", strings.Join(w, "; "))
	} else {
		add("versions", "ok", "plugin "+client+", controller "+c.Version)
	}
	s.checkRBAC(ctx, c, add)
	s.checkCRD(ctx, c, add)
	s.checkWebhook(ctx, c, now, add)
	return r
}

// checkRBAC asks the API server whether the controller's ServiceAccount may
// do what every installation of Reroll does, where it watches: read
// ConfigMaps and Secrets, patch Deployments, create Events.
func (s *session) checkRBAC(ctx context.Context, c *rerollController, add func(check, result, detail string)) {
	user := "system:serviceaccount:" + c.Namespace + ":" + c.ServiceAccount
	where := ""
	if len(c.Config.Namespaces) > 0 {
		where = c.Config.Namespaces[0]
	}
	needs := []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "configmaps"}, {Verb: "watch", Resource: "configmaps"},
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"},
		{Verb: "list", Group: "apps", Resource: "deployments"}, {Verb: "patch", Group: "apps", Resource: "deployments"},
		{Verb: "create", Resource: "events"},
	}
	var missing []string
	for _, a := range needs {
		a.Namespace = where
		if a.Resource == "events" && where == "" {
			a.Namespace = c.Namespace
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + c.Namespace, "system:authenticated"}}}
		if err := s.client.Create(ctx, sar); err != nil {
			add("rbac", "warning", fmt.Sprintf("could not ask the API server what %s may do (%v)", user, readError(err)))
			return
		}
		if !sar.Status.Allowed {
			missing = append(missing, fmt.Sprintf("%s %s", a.Verb, strings.TrimPrefix(a.Group+"/"+a.Resource, "/")))
		}
	}
	scope := "in every namespace"
	if where != "" {
		scope = "in namespace " + where
	}
	if len(missing) > 0 {
		add("rbac", "failed", fmt.Sprintf("%s may not %s %s (docs/security.md lists what each install mode grants)", user, strings.Join(missing, ", "), scope))
		return
	}
	add("rbac", "ok", fmt.Sprintf("%s may read ConfigMaps and Secrets, patch Deployments and create Events %s", user, scope))
}

// checkCRD checks that the Projection CRD is installed and established
// when the controller runs with --enable-projections.
func (s *session) checkCRD(ctx context.Context, c *rerollController, add func(check, result, detail string)) {
	var crd apiextensionsv1.CustomResourceDefinition
	err := s.client.Get(ctx, types.NamespacedName{Name: "projections.reroll.dev"}, &crd)
	switch {
	case err == nil:
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				add("crds", "ok", "projections.reroll.dev is established")
				return
			}
		}
		add("crds", "failed", "projections.reroll.dev is not established")
	case !c.Config.Projections:
		add("crds", "ok", "Projections are off (--enable-projections): no CRD needed")
	default:
		add("crds", "failed", fmt.Sprintf("the controller runs with --enable-projections but projections.reroll.dev cannot be read: %v", readError(err)))
	}
}

// checkWebhook checks, when the controller serves the admission webhook,
// the CA bundle of its MutatingWebhookConfiguration and the serving
// certificate in its Secret: valid now, and not expiring within
// certWarnBefore.
func (s *session) checkWebhook(ctx context.Context, c *rerollController, now time.Time, add func(check, result, detail string)) {
	if !c.Config.Webhook {
		add("webhook", "ok", "the admission webhook is off (--enable-webhook)")
		return
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := s.client.Get(ctx, types.NamespacedName{Name: c.Config.WebhookConfiguration}, &mwc); err != nil {
		add("webhook", "failed", fmt.Sprintf("MutatingWebhookConfiguration %s: %v", c.Config.WebhookConfiguration, readError(err)))
		return
	}
	for _, w := range mwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			add("webhook", "failed", fmt.Sprintf("webhook %s of %s has no caBundle: the API server cannot call it", w.Name, mwc.Name))
			return
		}
		result, detail := certState("caBundle of "+mwc.Name, w.ClientConfig.CABundle, now)
		if result != "ok" {
			add("webhook", result, detail)
			return
		}
	}
	ns, name, _ := strings.Cut(c.Config.WebhookCertSecret, "/")
	var sec corev1.Secret
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &sec); err != nil {
		add("webhook", "warning", fmt.Sprintf("could not read the serving certificate Secret %s: %v", c.Config.WebhookCertSecret, readError(err)))
		return
	}
	result, detail := certState("serving certificate in Secret "+c.Config.WebhookCertSecret, sec.Data[corev1.TLSCertKey], now)
	add("webhook", result, detail)
}

// certState judges the first certificate of pemData at now.
func certState(what string, pemData []byte, now time.Time) (string, string) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return "failed", what + " holds no PEM certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "failed", fmt.Sprintf("%s: %v", what, err)
	}
	switch {
	case now.Before(cert.NotBefore):
		return "failed", fmt.Sprintf("%s is not valid before %s", what, cert.NotBefore.UTC().Format(time.RFC3339))
	case now.After(cert.NotAfter):
		return "failed", fmt.Sprintf("%s expired at %s", what, cert.NotAfter.UTC().Format(time.RFC3339))
	case cert.NotAfter.Sub(now) < certWarnBefore:
		return "warning", fmt.Sprintf("%s expires at %s, in less than 30 days", what, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return "ok", fmt.Sprintf("%s valid until %s", what, cert.NotAfter.UTC().Format(time.RFC3339))
}

// write prints the report as a table.
func (r checkReport) write(w io.Writer) error {
	t := newTable(w, "CHECK", "RESULT", "DETAIL")
	for _, c := range r.Checks {
		t.row(c.Check, c.Result, c.Detail)
	}
	return t.flush()
}
