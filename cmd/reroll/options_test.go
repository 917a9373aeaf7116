package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// parse runs args and env through configure, as main does.
func parse(t *testing.T, env map[string]string, args ...string) (*flags, error) {
	t.Helper()
	f, _, err := configure(args, func(k string) string { return env[k] })
	return f, err
}

func TestOptions_DefaultsAreReloaders(t *testing.T) {
	g := gomega.NewWithT(t)
	var f flags
	g.Expect(newFlagSet(&f).Parse(nil)).To(gomega.Succeed())
	o, err := f.options(func(string) string { return "" })
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(o.Strategy).To(gomega.Equal(trigger.Annotations))
	g.Expect(o.Annotations).To(gomega.Equal(annotation.Config{Names: annotation.DefaultNames()}))
	g.Expect(o.ReloadOnCreate || o.ReloadOnDelete).To(gomega.BeFalse())
	g.Expect(o.PodEviction).To(gomega.BeFalse(), "no pod is watched by default")
	g.Expect(o.Scope.Namespaces).To(gomega.BeEmpty())
}

func TestOptions_Values(t *testing.T) {
	g := gomega.NewWithT(t)
	var f flags
	g.Expect(newFlagSet(&f).Parse([]string{
		"--reload-strategy=env-vars", "--auto-reload-all", "--resources-to-ignore=configMaps",
		"--ignored-workload-types=jobs,cronjobs", "--namespaces-to-ignore=kube-system,flux-system",
		"--namespace-selector=team=a", "--resource-label-selector=reroll!=off",
		"--auto-annotation=example.com/auto", "--webhook-url=https://hooks.example/reroll",
		"--evict-owner=kafka.strimzi.io/v1beta2/StrimziPodSet", "--enable-pod-eviction",
	})).To(gomega.Succeed())
	o, err := f.options(func(k string) string { return map[string]string{"KUBERNETES_NAMESPACE": "apps"}[k] })
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(o.Strategy).To(gomega.Equal(trigger.EnvVars))
	g.Expect(o.Annotations.AutoReloadAll).To(gomega.BeTrue())
	g.Expect(o.Annotations.IgnoreConfigMaps).To(gomega.BeTrue())
	g.Expect(o.Annotations.Names.Auto).To(gomega.Equal("example.com/auto"))
	g.Expect(o.IgnoredWorkloads).To(gomega.Equal([]string{"jobs", "cronjobs"}))
	g.Expect(o.Scope.Namespaces).To(gomega.Equal([]string{"apps"}))
	g.Expect(o.Scope.IgnoredNamespaces).To(gomega.Equal([]string{"kube-system", "flux-system"}))
	g.Expect(o.Scope.NamespaceSelector.String()).To(gomega.Equal("team=a"))
	g.Expect(o.Scope.ResourceSelector.String()).To(gomega.Equal("reroll!=off"))
	g.Expect(o.WebhookURL).To(gomega.Equal("https://hooks.example/reroll"))
	g.Expect(o.PodEviction).To(gomega.BeTrue())
	g.Expect(o.EvictOwners).To(gomega.Equal([]workload.PodOwner{{GVK: schema.GroupVersionKind{Group: "kafka.strimzi.io", Version: "v1beta2", Kind: "StrimziPodSet"}}}))
}

func TestOptions_RejectsMalformedValues(t *testing.T) {
	cases := map[string]struct {
		// args are the command line; env the environment.
		args []string
		env  map[string]string
		// want is a part of the error message.
		want string
	}{
		"unknown strategy":          {args: []string{"--reload-strategy=rolling"}, want: `--reload-strategy: unknown reload strategy "rolling"`},
		"unknown resource":          {args: []string{"--resources-to-ignore=pods"}, want: `--resources-to-ignore: unknown resource "pods"`},
		"both resources ignored":    {args: []string{"--resources-to-ignore=configMaps,secrets"}, want: "leaves nothing to watch"},
		"unknown workload type":     {args: []string{"--ignored-workload-types=pods"}, want: `--ignored-workload-types: unknown workload type "pods"`},
		"bad namespace selector":    {args: []string{"--namespace-selector=a in ("}, want: "--namespace-selector:"},
		"bad resource selector":     {args: []string{"--resource-label-selector=!!"}, want: "--resource-label-selector:"},
		"bad webhook URL":           {args: []string{"--webhook-url=ftp://x"}, want: `--webhook-url: the value is not an http or https URL`},
		"two webhook URL sources":   {args: []string{"--webhook-url=https://a.example"}, env: map[string]string{"REROLL_WEBHOOK_URL": "https://b.example"}, want: "set by --webhook-url and REROLL_WEBHOOK_URL: set one"},
		"unreadable webhook URL":    {args: []string{"--webhook-url-file=/nonexistent/url"}, want: "--webhook-url-file: open /nonexistent/url"},
		"empty annotation name":     {args: []string{"--auto-annotation="}, want: "--auto-annotation: an annotation name is required"},
		"namespace watched+ignored": {args: []string{"--namespaces=a", "--namespaces-to-ignore=a"}, want: "namespace a is both watched and ignored"},
		"env and flag disagree":     {args: []string{"--namespaces=a"}, env: map[string]string{"KUBERNETES_NAMESPACE": "b"}, want: "KUBERNETES_NAMESPACE=b and --namespaces=a disagree"},
		"HA without a namespace":    {args: []string{"--enable-ha"}, want: "--enable-ha: set POD_NAMESPACE"},
		"renew not under lease":     {args: []string{"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=4s"}, want: "--leader-election-renew-deadline (4s) must be less than --leader-election-lease-duration (4s)"},
		"retry not under renew":     {args: []string{"--leader-election-renew-deadline=3s", "--leader-election-retry-period=3s"}, want: "--leader-election-renew-deadline (3s) must be more than 1.2 times --leader-election-retry-period (3s)"},
		"invalid Lease name":        {args: []string{"--leader-election-id=Not_A_Name"}, want: "--leader-election-id: \"Not_A_Name\" is not a valid Lease name"},
		"evict owner without group": {args: []string{"--evict-owner=v1/Thing", "--enable-pod-eviction"}, want: `--evict-owner: evict owner "v1/Thing": want <group>/<version>/<Kind>`},
		"evict owner, eviction off": {args: []string{"--evict-owner=kafka.strimzi.io/v1beta2/StrimziPodSet"}, want: "--evict-owner: restarts by eviction are off; add --enable-pod-eviction"},
		"zero lease":                {args: []string{"--leader-election-lease-duration=0s"}, want: "--leader-election-lease-duration: 0s is not positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			_, err := parse(t, tc.env, tc.args...)
			g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)))
		})
	}
}

func TestOptions_LeaderElectionTimings(t *testing.T) {
	cases := map[string]struct {
		// args are the command line.
		args []string
		// want are the timings passed to the manager.
		want leaderElectionFlags
	}{
		"controller-runtime defaults": {want: leaderElectionFlags{id: "reroll-leader", leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second}},
		"short fail-over": {
			args: []string{"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s"},
			want: leaderElectionFlags{id: "reroll-leader", leaseDuration: 4 * time.Second, renewDeadline: 3 * time.Second, retryPeriod: time.Second},
		},
		"a Lease per release": {
			args: []string{"--leader-election-id=team-a-reroll-leader"},
			want: leaderElectionFlags{id: "team-a-reroll-leader", leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			f, err := parse(t, map[string]string{"POD_NAMESPACE": "reroll-system"}, append(tc.args, "--enable-ha")...)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(f.leaderElection).To(gomega.Equal(tc.want))
		})
	}
}

func TestNewLogger_RejectsUnknownValues(t *testing.T) {
	g := gomega.NewWithT(t)
	_, err := newLogger("xml", "info")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`--log-format: unknown format "xml"`)))
	_, err = newLogger("json", "loud")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`--log-level: unknown level "loud"`)))
	for _, level := range []string{"trace", "debug", "info", "warning", "error", "fatal", "panic"} {
		_, err = newLogger("", level)
		g.Expect(err).NotTo(gomega.HaveOccurred(), level)
	}
}

// TestFlagsDoc fails when docs/flags.md does not match the flags; run
// `make docs` (UPDATE_DOCS=1) to regenerate it.
func TestFlagsDoc(t *testing.T) {
	g := gomega.NewWithT(t)
	var f flags
	want := flagsMarkdown(newFlagSet(&f))
	path := filepath.Join("..", "..", "docs", "flags.md")
	if os.Getenv("UPDATE_DOCS") == "1" {
		g.Expect(os.WriteFile(path, []byte(want), 0o644)).To(gomega.Succeed())
	}
	got, err := os.ReadFile(path)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(got)).To(gomega.Equal(want), "docs/flags.md is stale: run make docs")
}

func TestOptions_AlertEnv(t *testing.T) {
	cases := map[string]struct {
		env     map[string]string // the process environment
		on      bool              // whether an alerter is built
		wantErr string            // a substring of the error; "" for none
	}{
		"off by default":            {env: nil},
		"not true is off":           {env: map[string]string{"ALERT_ON_RELOAD": "yes", "ALERT_SINK": "bogus"}},
		"webhook is the default":    {env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x"}, on: true},
		"slack with proxy and info": {env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/X", "ALERT_WEBHOOK_PROXY": "http://proxy:3128", "ALERT_ADDITIONAL_INFO": "prod"}, on: true},
		"unknown sink":              {env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "discord", "ALERT_WEBHOOK_URL": "https://hooks.example/x"}, wantErr: "ALERT_SINK"},
		"missing URL":               {env: map[string]string{"ALERT_ON_RELOAD": "true"}, wantErr: "ALERT_WEBHOOK_URL"},
		"malformed URL":             {env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "hooks.example/x"}, wantErr: "ALERT_WEBHOOK_URL"},
		"malformed proxy":           {env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_WEBHOOK_PROXY": "::"}, wantErr: "ALERT_WEBHOOK_PROXY"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			var f flags
			g.Expect(newFlagSet(&f).Parse(nil)).To(gomega.Succeed())
			o, err := f.options(func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(c.wantErr)))
				g.Expect(err.Error()).NotTo(gomega.ContainSubstring("hooks.example"), "the URL may hold a token")
				return
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(o.Alerter != nil).To(gomega.Equal(c.on))
		})
	}
}

func TestOptions_BatchFlagsUnsetLetTheDialectDecide(t *testing.T) {
	cases := map[string]struct {
		// args are the command line.
		args []string
		// trigger is the CronJob kind's Trigger; recreate its Job kind's
		// RecreateCompleted (nil: not given).
		trigger  string
		recreate *bool
	}{
		"unset":         {},
		"given off":     {args: []string{"--cronjob-trigger=none", "--recreate-completed-jobs=false"}, trigger: "none", recreate: ptr.To(false)},
		"given on":      {args: []string{"--cronjob-trigger=job", "--recreate-completed-jobs"}, trigger: "job", recreate: ptr.To(true)},
		"only recreate": {args: []string{"--recreate-completed-jobs=true"}, recreate: ptr.To(true)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			_, o, err := configure(tc.args, func(string) string { return "" })
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(o.Kinds).To(gomega.ContainElements(workload.CronJob{Trigger: tc.trigger}, workload.Job{RecreateCompleted: tc.recreate}))
		})
	}
}

func TestOptions_WebhookURLFromFileOrEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte("https://hooks.example/from-file?token=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		// args and env are the command line and environment.
		args []string
		env  map[string]string
		// want is the notification endpoint's URL.
		want string
	}{
		"flag":        {args: []string{"--webhook-url=https://hooks.example/flag"}, want: "https://hooks.example/flag"},
		"file":        {args: []string{"--webhook-url-file=" + file}, want: "https://hooks.example/from-file?token=x"},
		"environment": {env: map[string]string{"REROLL_WEBHOOK_URL": "https://hooks.example/env"}, want: "https://hooks.example/env"},
		"none":        {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			var f flags
			g.Expect(newFlagSet(&f).Parse(tc.args)).To(gomega.Succeed())
			o, err := f.options(func(k string) string { return tc.env[k] })
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(o.WebhookURL).To(gomega.Equal(tc.want))
		})
	}
}
