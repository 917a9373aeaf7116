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

// reloaderFlag is one flag that Stakater Reloader v1.4.21 declares.
type reloaderFlag struct {
	// typ is the pflag type Reloader declares: "bool", "string" or
	// "stringSlice".
	typ string
	// value is a value to give; the bools take "true".
	value string
	// check asserts what value means to Reroll.
	check func(g gomega.Gomega, f *flags, o controller.Options)
}

// reloaderFlags lists every flag of Reloader v1.4.21, with its type, as
// declared in internal/pkg/util/util.go, ConfigureReloaderFlags (lines
// 84-112: `git -C /work/.mirror/stakater+Reloader/repo show
// v1.4.21:internal/pkg/util/util.go`).
var reloaderFlags = map[string]reloaderFlag{
	"auto-reload-all": {typ: "bool", value: "true", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.AutoReloadAll).To(gomega.BeTrue())
	}},
	"configmap-annotation": {typ: "string", value: "example.com/cm", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.ConfigMapReload).To(gomega.Equal("example.com/cm"))
	}},
	"secret-annotation": {typ: "string", value: "example.com/s", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.SecretReload).To(gomega.Equal("example.com/s"))
	}},
	"auto-annotation": {typ: "string", value: "example.com/auto", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.Auto).To(gomega.Equal("example.com/auto"))
	}},
	"ignore-annotation": {typ: "string", value: "example.com/ignore", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.Ignore).To(gomega.Equal("example.com/ignore"))
	}},
	"configmap-auto-annotation": {typ: "string", value: "example.com/cm-auto", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.ConfigMapAuto).To(gomega.Equal("example.com/cm-auto"))
	}},
	"secret-auto-annotation": {typ: "string", value: "example.com/s-auto", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.SecretAuto).To(gomega.Equal("example.com/s-auto"))
	}},
	"auto-search-annotation": {typ: "string", value: "example.com/search", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.Search).To(gomega.Equal("example.com/search"))
	}},
	"search-match-annotation": {typ: "string", value: "example.com/match", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.Match).To(gomega.Equal("example.com/match"))
	}},
	"pause-deployment-annotation": {typ: "string", value: "example.com/pause", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.PausePeriod).To(gomega.Equal("example.com/pause"))
	}},
	"pause-deployment-time-annotation": {typ: "string", value: "example.com/paused-at", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.Names.PausedAt).To(gomega.Equal("example.com/paused-at"))
	}},
	"log-format": {typ: "string", value: "json", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.logFormat).To(gomega.Equal("json"))
	}},
	"log-level": {typ: "string", value: "debug", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.logLevel).To(gomega.Equal("debug"))
	}},
	"webhook-url": {typ: "string", value: "https://hooks.example/reload", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.WebhookURL).To(gomega.Equal("https://hooks.example/reload"))
	}},
	"resources-to-ignore": {typ: "stringSlice", value: "secrets", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.IgnoreSecrets).To(gomega.BeTrue())
		g.Expect(o.Annotations.IgnoreConfigMaps).To(gomega.BeFalse())
	}},
	"ignored-workload-types": {typ: "stringSlice", value: "jobs,cronjobs", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.IgnoredWorkloads).To(gomega.Equal([]string{"jobs", "cronjobs"}))
	}},
	"namespaces": {typ: "stringSlice", value: "team-a,team-b", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Scope.Namespaces).To(gomega.Equal([]string{"team-a", "team-b"}))
	}},
	"namespaces-to-ignore": {typ: "stringSlice", value: "kube-system,kube-public", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Scope.IgnoredNamespaces).To(gomega.Equal([]string{"kube-system", "kube-public"}))
	}},
	"namespace-selector": {typ: "stringSlice", value: "env=test,team:a", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("env=test,team=a"))
	}},
	"resource-label-selector": {typ: "stringSlice", value: "reloader=enabled", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Scope.ResourceSelector.String()).To(gomega.Equal("reloader=enabled"))
	}},
	"is-Argo-Rollouts": {typ: "string", value: "true", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.isArgoRollouts.on()).To(gomega.BeTrue())
	}},
	"reload-strategy": {typ: "string", value: "env-vars", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Strategy).To(gomega.Equal(trigger.EnvVars))
	}},
	"reload-on-create": {typ: "string", value: "true", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.ReloadOnCreate).To(gomega.BeTrue())
	}},
	"reload-on-delete": {typ: "string", value: "true", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.ReloadOnDelete).To(gomega.BeTrue())
	}},
	"enable-ha": {typ: "bool", value: "true", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.enableHA).To(gomega.BeTrue())
	}},
	"sync-after-restart": {typ: "bool", value: "true", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.syncAfterRestart).To(gomega.BeTrue())
	}},
	"enable-pprof": {typ: "bool", value: "true", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.enablePProf).To(gomega.BeTrue())
	}},
	"pprof-addr": {typ: "string", value: ":6061", check: func(g gomega.Gomega, f *flags, _ controller.Options) {
		g.Expect(f.pprofAddr).To(gomega.Equal(":6061"))
	}},
	"enable-csi-integration": {typ: "bool", value: "true", check: func(g gomega.Gomega, _ *flags, o controller.Options) {
		g.Expect(o.Annotations.SecretProviderClasses).To(gomega.BeTrue())
	}},
}

// TestConfigure_TakesEveryReloaderFlagInBothForms gives each flag of
// Reloader v1.4.21 as "--flag=value" and as "--flag value", and checks that
// Reroll declares it with Reloader's type and reads the same effect from
// both forms.
func TestConfigure_TakesEveryReloaderFlagInBothForms(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(reloaderFlags).To(gomega.HaveLen(29), "ConfigureReloaderFlags declares 29 flags")
	env := map[string]string{"POD_NAME": "reroll-0", "POD_NAMESPACE": "reroll"}
	for name, rf := range reloaderFlags {
		forms := map[string][]string{
			"equals": {"--" + name + "=" + rf.value},
			"spaced": {"--" + name, rf.value},
		}
		for form, args := range forms {
			t.Run(name+"/"+form, func(t *testing.T) {
				g := gomega.NewWithT(t)
				f, o, err := configure(args, func(k string) string { return env[k] })
				g.Expect(err).NotTo(gomega.HaveOccurred())
				g.Expect(f.set.Lookup(name).Value.Type()).To(gomega.Equal(rf.typ), "Reloader's type")
				g.Expect(f.set.Changed(name)).To(gomega.BeTrue())
				rf.check(g, f, o)
			})
		}
	}
}

// TestConfigure_RepeatedReloaderFlagsAsPflagReadsThem checks that a
// repeated flag means what it means to Reloader's pflag: the last value of
// a string, every value of a string slice (joined with "," for the
// selectors, as Reloader's GetNamespaceLabelSelector joins them).
func TestConfigure_RepeatedReloaderFlagsAsPflagReadsThem(t *testing.T) {
	cases := map[string]struct {
		// args are the command line.
		args []string
		// check asserts the effect.
		check func(g gomega.Gomega, f *flags, o controller.Options)
	}{
		"string: last wins": {args: []string{"--reload-strategy=annotations", "--reload-strategy", "env-vars"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Strategy).To(gomega.Equal(trigger.EnvVars))
		}},
		"string switch: last wins, off": {args: []string{"--reload-on-create=true", "--reload-on-create", "false"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.ReloadOnCreate).To(gomega.BeFalse())
		}},
		"string switch: last wins, on": {args: []string{"--reload-on-delete=false", "--reload-on-delete", "true"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.ReloadOnDelete).To(gomega.BeTrue())
		}},
		"slice: values append": {args: []string{"--namespaces=a", "--namespaces", "b,c"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.Namespaces).To(gomega.Equal([]string{"a", "b", "c"}))
		}},
		"selector slice: selectors are ANDed": {args: []string{"--namespace-selector=env=test", "--namespace-selector", "team=a"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("env=test,team=a"))
		}},
		"bool: last wins": {args: []string{"--auto-reload-all", "--auto-reload-all=false"}, check: func(g gomega.Gomega, _ *flags, o controller.Options) {
			g.Expect(o.Annotations.AutoReloadAll).To(gomega.BeFalse())
		}},
		// Reloader's controller compares the value with "true": "True" is
		// off there, so it is here, with a warning.
		"string switch: True is off, as in Reloader": {args: []string{"--reload-on-create", "True"}, check: func(g gomega.Gomega, f *flags, o controller.Options) {
			g.Expect(o.ReloadOnCreate).To(gomega.BeFalse())
			g.Expect(f.offReloaderBools()).To(gomega.HaveLen(1))
			g.Expect(f.offReloaderBools()[0].Name).To(gomega.Equal("reload-on-create"))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			f, o, err := configure(tc.args, func(string) string { return "" })
			g.Expect(err).NotTo(gomega.HaveOccurred())
			tc.check(g, f, o)
		})
	}
}

// TestConfigure_RefusesABoolFollowedByAnotherWord: Reloader reads
// "--enable-ha false" as on and drops "false"; Reroll refuses it, naming
// the form to write. The positive control is "--enable-ha true".
func TestConfigure_RefusesABoolFollowedByAnotherWord(t *testing.T) {
	g := gomega.NewWithT(t)
	env := func(k string) string { return map[string]string{"POD_NAMESPACE": "reroll"}[k] }
	f, _, err := configure([]string{"--enable-ha", "true"}, env)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.enableHA).To(gomega.BeTrue())
	_, _, err = configure([]string{"--enable-ha", "false"}, env)
	g.Expect(err).To(gomega.MatchError(`--enable-ha false: Reloader reads this as --enable-ha=true and drops "false"; write --enable-ha=true or --enable-ha=false`))
	_, _, err = configure([]string{"--enable-ha", "yes"}, env)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("--enable-ha yes:")))
}
