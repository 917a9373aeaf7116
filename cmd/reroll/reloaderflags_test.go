package main

import (
	"testing"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/trigger"
)

// TestConfigure_AcceptsEveryArgumentOfReloadersChart feeds configure, the
// code path main runs before it talks to the API server, the arguments and
// environment that each value of Stakater Reloader's Helm chart
// (deployments/kubernetes/chart/reloader, templates/deployment.yaml) renders,
// written out as that template writes them, quotes included.
func TestConfigure_AcceptsEveryArgumentOfReloadersChart(t *testing.T) {
	cases := map[string]struct {
		// args are the container arguments the value renders.
		args []string
		// env is the environment the chart sets with the value.
		env map[string]string
		// check, when set, asserts what the arguments mean to Reroll.
		check func(g gomega.Gomega, f *flags, o controller.Options)
	}{
		"defaults render no arguments": {},
		"reloader.logFormat":           {args: []string{"--log-format=json"}},
		"reloader.logLevel":            {args: []string{"--log-level=debug"}},
		"reloader.ignoreSecrets": {args: []string{"--resources-to-ignore=secrets"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.IgnoreSecrets).To(gomega.BeTrue())
		}},
		"reloader.ignoreConfigMaps": {args: []string{"--resources-to-ignore=configmaps"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.IgnoreConfigMaps).To(gomega.BeTrue())
		}},
		"reloader.ignoreJobs and ignoreCronJobs": {args: []string{"--ignored-workload-types=jobs,cronjobs"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.IgnoredWorkloads).To(gomega.Equal([]string{"jobs", "cronjobs"}))
		}},
		"reloader.ignoreJobs":     {args: []string{"--ignored-workload-types=jobs"}},
		"reloader.ignoreCronJobs": {args: []string{"--ignored-workload-types=cronjobs"}},
		"reloader.namespaces (release namespace added)": {args: []string{"--namespaces=reloader,team-a,team-b"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.Namespaces).To(gomega.Equal([]string{"reloader", "team-a", "team-b"}))
		}},
		"reloader.watchGlobally false": {env: map[string]string{"KUBERNETES_NAMESPACE": "reloader"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.Namespaces).To(gomega.Equal([]string{"reloader"}))
		}},
		"reloader.ignoreNamespaces": {args: []string{"--namespaces-to-ignore=kube-system,kube-public"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.IgnoredNamespaces).To(gomega.Equal([]string{"kube-system", "kube-public"}))
		}},
		"reloader.namespaceSelector (rendered in double quotes)": {args: []string{`--namespace-selector="env=test"`}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("env=test"))
		}},
		"reloader.namespaceSelector with several selectors": {args: []string{`--namespace-selector="env=test,team in (a,b),!legacy"`}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("env=test,!legacy,team in (a,b)"))
		}},
		"reloader.namespaceSelector in Reloader's legacy key:value form": {args: []string{`--namespace-selector="env:test,team:*"`}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("env=test,team"))
		}},
		"reloader.resourceLabelSelector": {args: []string{"--resource-label-selector=reloader=enabled"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.ResourceSelector.String()).To(gomega.Equal("reloader=enabled"))
		}},
		"reloader.enablePProf and pprofAddr": {args: []string{"--enable-pprof", "--pprof-addr=:6060"}, check: func(g gomega.Gomega, f *flags, _ controller.Options) {
			g.Expect(f.enablePProf).To(gomega.BeTrue())
			g.Expect(f.pprofAddr).To(gomega.Equal(":6060"))
		}},
		"reloader.enableCSIIntegration": {args: []string{"--enable-csi-integration=true"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.SecretProviderClasses).To(gomega.BeTrue())
		}},
		"reloader.custom_annotations (every one) and webhookUrl": {args: []string{
			"--configmap-annotation", "example.com/configmaps", "--secret-annotation", "example.com/secrets",
			"--auto-annotation", "example.com/auto", "--secret-auto-annotation", "example.com/secret-auto",
			"--configmap-auto-annotation", "example.com/configmap-auto", "--auto-search-annotation", "example.com/search",
			"--search-match-annotation", "example.com/match", "--ignore-annotation", "example.com/ignore",
			"--pause-deployment-annotation", "example.com/pause", "--pause-deployment-time-annotation", "example.com/paused-at",
			"--webhook-url", "https://hooks.example/reload",
		}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.Names.Auto).To(gomega.Equal("example.com/auto"))
			g.Expect(o.Annotations.Names.PausedAt).To(gomega.Equal("example.com/paused-at"))
			g.Expect(o.WebhookURL).To(gomega.Equal("https://hooks.example/reload"))
		}},
		"reloader.isArgoRollouts": {args: []string{"--is-Argo-Rollouts=true"}},
		"reloader.reloadOnCreate": {args: []string{"--reload-on-create=true"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.ReloadOnCreate).To(gomega.BeTrue())
		}},
		"reloader.reloadOnDelete":   {args: []string{"--reload-on-delete=true"}},
		"reloader.syncAfterRestart": {args: []string{"--sync-after-restart=true"}},
		"reloader.reloadStrategy env-vars": {args: []string{"--reload-strategy=env-vars"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Strategy).To(gomega.Equal(trigger.EnvVars))
		}},
		"reloader.reloadStrategy annotations":     {args: []string{"--reload-strategy=annotations"}},
		"reloader.enableHA (or replicas above 1)": {args: []string{"--enable-ha=true"}, env: map[string]string{"POD_NAME": "reloader-0", "POD_NAMESPACE": "reloader"}},
		"reloader.autoReloadAll": {args: []string{"--auto-reload-all=true"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.AutoReloadAll).To(gomega.BeTrue())
		}},
		"reloader.enableMetricsByNamespace": {env: map[string]string{"METRICS_COUNT_BY_NAMESPACE": "enabled"}},
		"flags of older Reloader releases": {args: []string{
			"--configmap-auto-by-annotation=x", "--secret-auto-by-annotation=y", "--spc-annotation=example.com/spc", "--spc-auto-annotation=example.com/spc-auto",
		}, check: func(g gomega.Gomega, f *flags, o controller.Options) {
			g.Expect(unimplemented(f.set)).To(gomega.Equal([]string{"--configmap-auto-by-annotation", "--secret-auto-by-annotation"}))
			g.Expect(o.Annotations.Names.SecretProviderClassReload).To(gomega.Equal("example.com/spc"))
			g.Expect(o.Annotations.Names.SecretProviderClassAuto).To(gomega.Equal("example.com/spc-auto"))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			// Every value renders RELOADER_NAMESPACE and
			// RELOADER_DEPLOYMENT_NAME, and the limits as GOMAXPROCS and
			// GOMEMLIMIT.
			env := map[string]string{"RELOADER_NAMESPACE": "reloader", "RELOADER_DEPLOYMENT_NAME": "reloader-reloader"}
			for k, v := range tc.env {
				env[k] = v
			}
			f, o, err := configure(tc.args, func(k string) string { return env[k] })
			g.Expect(err).NotTo(gomega.HaveOccurred())
			if tc.check != nil {
				tc.check(g, f, o)
			} else {
				g.Expect(f).NotTo(gomega.BeNil())
			}
		})
	}
}

func TestParseSelector(t *testing.T) {
	cases := map[string]struct {
		// value is the flag's value as given.
		value string
		// want is the parsed selector's canonical form; "" when an error is
		// expected.
		want string
	}{
		"plain":                  {value: "env=test", want: "env=test"},
		"double quotes":          {value: `"env=test"`, want: "env=test"},
		"single quotes":          {value: `'env=test'`, want: "env=test"},
		"quotes per entry":       {value: `"env=test","team=a"`, want: "env=test,team=a"},
		"set-based kept":         {value: `"team in (a,b),env!=dev"`, want: "env!=dev,team in (a,b)"},
		"legacy key:value":       {value: "env:test", want: "env=test"},
		"legacy key:*":           {value: "env:*", want: "env"},
		"legacy key=*":           {value: "env=*", want: "env"},
		"prefixed key":           {value: "example.com/team:a", want: "example.com/team=a"},
		"unmatched quote stays":  {value: `"env=test`, want: ""},
		"malformed after quotes": {value: `"a in ("`, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			sel, err := parseSelector("--namespace-selector", tc.value)
			if tc.want == "" {
				g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--namespace-selector:")))
				return
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(sel.String()).To(gomega.Equal(tc.want))
		})
	}
}
