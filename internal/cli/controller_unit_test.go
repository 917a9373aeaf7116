package cli

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/annotation"
)

func TestParseControllerConfig(t *testing.T) {
	cases := map[string]struct {
		// args and env are the controller container's.
		args []string
		env  map[string]string
		// check asserts what the plugin takes from them.
		check func(g gomega.Gomega, c controllerConfig)
	}{
		"no arguments are the defaults, the key Secret in the Deployment's namespace": {
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.Names).To(gomega.Equal(annotation.DefaultNames()))
				g.Expect(c.DigestKeySecret).To(gomega.Equal("reroll-system/reroll-digest-key"))
				g.Expect(c.Installation).To(gomega.Equal("reroll-system/reroll-installation"))
				g.Expect(c.NamespaceSelector).To(gomega.BeNil())
				g.Expect(c.Namespaces).To(gomega.BeEmpty())
			},
		},
		"Reloader's custom annotations, spaced, and its string switches": {
			args: []string{"--auto-annotation", "example.com/auto", "--search-match-annotation=example.com/match", "--reload-on-create", "true", "--reload-on-delete=yes", "--enable-ha", "--auto-reload-all"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.Names.Auto).To(gomega.Equal("example.com/auto"))
				g.Expect(c.Names.Match).To(gomega.Equal("example.com/match"))
				g.Expect(c.Names.SecretReload).To(gomega.Equal(annotation.DefaultNames().SecretReload))
				g.Expect(c.ReloadOnCreate).To(gomega.BeTrue())
				g.Expect(c.ReloadOnDelete).To(gomega.BeFalse(), "only the string true turns it on, as in Reloader")
				g.Expect(c.AutoReloadAll).To(gomega.BeTrue())
			},
		},
		"scope, selectors in Reloader's forms and ignores": {
			args: []string{`--namespace-selector="env:prod"`, "--resource-label-selector=reloader=enabled", "--namespaces-to-ignore=kube-system", "--ignored-workload-types=Jobs,cronjobs", "--resources-to-ignore=Secrets"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.NamespaceSelector.String()).To(gomega.Equal("env=prod"))
				g.Expect(c.ResourceSelector.String()).To(gomega.Equal("reloader=enabled"))
				g.Expect(c.IgnoredNamespaces).To(gomega.Equal([]string{"kube-system"}))
				g.Expect(c.IgnoredWorkloadTypes).To(gomega.Equal([]string{"jobs", "cronjobs"}))
				g.Expect(c.ResourcesToIgnore).To(gomega.Equal([]string{"secrets"}))
			},
		},
		"watchGlobally false sets the one namespace; a digest key elsewhere": {
			args: []string{"--digest-key-namespace=security", "--digest-key-secret=key", "--installation-configmap=installed"},
			env:  map[string]string{"KUBERNETES_NAMESPACE": "reloader"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.Namespaces).To(gomega.Equal([]string{"reloader"}))
				g.Expect(c.DigestKeySecret).To(gomega.Equal("security/key"))
				g.Expect(c.Installation).To(gomega.Equal("security/installed"))
			},
		},
		"plain metrics on 9090 unless told: Reloader's arguments": {
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.MetricsSecure).To(gomega.BeFalse())
				g.Expect(c.MetricsTokenSecret).To(gomega.BeEmpty())
				g.Expect(c.MetricsPort).To(gomega.Equal("9090"))
			},
		},
		"the chart's secure metrics: the token Secret in the digest key's namespace": {
			args: []string{"--metrics-bind-address=:8443", "--metrics-secure=true", "--metrics-token-secret", "r-metrics-token", "--digest-key-namespace=security"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.MetricsSecure).To(gomega.BeTrue())
				g.Expect(c.MetricsTokenSecret).To(gomega.Equal("security/r-metrics-token"))
				g.Expect(c.MetricsPort).To(gomega.Equal("8443"))
			},
		},
		"secure metrics without a token Secret: the API server authorizes": {
			args: []string{"--metrics-secure"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.MetricsSecure).To(gomega.BeTrue())
				g.Expect(c.MetricsTokenSecret).To(gomega.BeEmpty())
			},
		},
		"a token Secret without secure metrics is not used": {
			args: []string{"--metrics-secure=false", "--metrics-token-secret=t"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.MetricsSecure).To(gomega.BeFalse())
				g.Expect(c.MetricsTokenSecret).To(gomega.BeEmpty())
			},
		},
		"flags the plugin does not need are skipped": {
			args: []string{"--metrics-bind-address=:9090", "--enable-webhook", "--leader-election-id", "x", "--auto-annotation=a.example/auto"},
			check: func(g gomega.Gomega, c controllerConfig) {
				g.Expect(c.Names.Auto).To(gomega.Equal("a.example/auto"))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			c, err := parseControllerConfig(tc.args, tc.env, "reroll-system")
			g.Expect(err).NotTo(gomega.HaveOccurred())
			tc.check(g, c)
		})
	}
	_, err := parseControllerConfig([]string{"--namespace-selector=a in (b"}, nil, "x")
	gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--namespace-selector")))
}

func TestSkew(t *testing.T) {
	cases := map[string]struct {
		// client and server are the plugin's version and the image tag.
		client, server string
		// warns is whether a warning is printed.
		warns bool
	}{
		"the same release":                 {client: "v0.1.0", server: "v0.1.0"},
		"another patch of the same minor":  {client: "v0.1.0", server: "v0.1.3"},
		"another minor":                    {client: "v0.1.0", server: "v0.2.0", warns: true},
		"a tag without v":                  {client: "v0.1.0", server: "0.1.0"},
		"an image without a version tag":   {client: "v0.1.0", server: "", warns: true},
		"a plugin built without a version": {client: "unknown", server: "v0.1.0", warns: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			w := skew(tc.client, &serverVersion{Deployment: "reroll-system/reroll", Image: "ghcr.io/reroll/reroll:" + tc.server, Version: tc.server})
			g.Expect(len(w) > 0).To(gomega.Equal(tc.warns), "%v", w)
		})
	}
	gomega.NewWithT(t).Expect(imageTag("harbor.corp/proxy/reroll:v0.1.0@sha256:abc")).To(gomega.Equal("v0.1.0"))
	gomega.NewWithT(t).Expect(imageTag("registry:5000/reroll")).To(gomega.Equal(""))
}

func TestRerollController_OutOfScope(t *testing.T) {
	cfg, err := parseControllerConfig([]string{"--ignored-workload-types=jobs", "--namespaces-to-ignore=kube-system", "--namespace-selector=team=a"}, nil, "reroll")
	if err != nil {
		t.Fatal(err)
	}
	c := &rerollController{Config: cfg}
	teamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}
	teamB := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "b"}}}
	cases := map[string]struct {
		// ns is the workload's Namespace object, namespace its name, plural
		// its kind's.
		ns        *corev1.Namespace
		namespace string
		plural    string
		// want is a substring of the reason; "" for in scope.
		want string
	}{
		"a Deployment in a selected namespace is in scope": {ns: teamA, namespace: "shop", plural: "deployments"},
		"an ignored kind":                     {ns: teamA, namespace: "shop", plural: "jobs", want: "--ignored-workload-types=jobs"},
		"an ignored namespace":                {ns: teamA, namespace: "kube-system", plural: "deployments", want: "--namespaces-to-ignore=kube-system"},
		"a namespace the selector leaves out": {ns: teamB, namespace: "shop", plural: "deployments", want: "--namespace-selector=team=a"},
		"a Namespace that could not be read":  {ns: nil, namespace: "shop", plural: "deployments"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got := c.outOfScope(tc.ns, tc.namespace, tc.plural)
			if tc.want == "" {
				g.Expect(got).To(gomega.BeEmpty())
				return
			}
			g.Expect(got).To(gomega.ContainSubstring(tc.want))
		})
	}
	only := &rerollController{Config: controllerConfig{Namespaces: []string{"reloader"}}}
	gomega.NewWithT(t).Expect(only.outOfScope(nil, "shop", "deployments")).To(gomega.ContainSubstring("--namespaces=reloader"))
	gomega.NewWithT(t).Expect(only.outOfScope(nil, "reloader", "deployments")).To(gomega.BeEmpty())
}
