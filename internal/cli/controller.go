package cli

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/selector"
	"github.com/reroll/reroll/internal/workload"
)

// DefaultControllerSelector selects Reroll's Deployment: the label its
// chart, its Kustomize base and deploy/reroll.yaml put on it.
const DefaultControllerSelector = "app.kubernetes.io/name=reroll"

// rerollController is the Reroll the plugin found running, and what its
// arguments mean for the plugin's answers.
type rerollController struct {
	// Namespace and Name are its Deployment's.
	Namespace, Name string
	// Image is its container's image; Version the image's tag ("" for a
	// digest or no tag).
	Image, Version string
	// Replicas and Ready are the Deployment's spec.replicas and
	// status.readyReplicas.
	Replicas, Ready int32
	// ServiceAccount is its pods' ServiceAccount, in Namespace.
	ServiceAccount string
	// Config is what its arguments configure.
	Config controllerConfig
}

// controllerConfig is what the controller's arguments (and environment)
// set that decides what rolls, as cmd/reroll reads them.
type controllerConfig struct {
	// Names are the annotation names (--auto-annotation, ...).
	Names annotation.Names
	// AutoReloadAll is --auto-reload-all; ReloadOnCreate and
	// ReloadOnDelete are --reload-on-create and --reload-on-delete (on only
	// as "true", as Reloader reads them).
	AutoReloadAll, ReloadOnCreate, ReloadOnDelete bool
	// ResourcesToIgnore is --resources-to-ignore, lower case.
	ResourcesToIgnore []string
	// IgnoredWorkloadTypes is --ignored-workload-types, lower-case plurals.
	IgnoredWorkloadTypes []string
	// Namespaces is --namespaces (or KUBERNETES_NAMESPACE): the only
	// namespaces watched; empty for all. IgnoredNamespaces is
	// --namespaces-to-ignore.
	Namespaces, IgnoredNamespaces []string
	// NamespaceSelector and ResourceSelector are --namespace-selector and
	// --resource-label-selector; nil when unset.
	NamespaceSelector, ResourceSelector labels.Selector
	// DigestKeySecret is NAMESPACE/NAME of its digest key Secret
	// (--digest-key-namespace, default its own namespace, and
	// --digest-key-secret).
	DigestKeySecret string
	// Installation is NAMESPACE/NAME of its installation ConfigMap
	// (--digest-key-namespace and --installation-configmap), which holds
	// its installation time.
	Installation string
	// Baselines is NAMESPACE/PREFIX of the ConfigMaps where it keeps the
	// baselines of workloads it has not rolled yet (--digest-key-namespace
	// and --baselines); "" when it keeps none there: --baselines="",
	// --defer-record=false, or --enable-webhook or --reload-on-delete,
	// which keep the record on every workload.
	Baselines string
	// Webhook is --enable-webhook; WebhookConfiguration and
	// WebhookCertSecret (NAMESPACE/NAME) are --webhook-configuration-name
	// and --webhook-cert-secret in --webhook-namespace.
	Webhook                                 bool
	WebhookConfiguration, WebhookCertSecret string
	// Projections is --enable-projections.
	Projections bool
	// ChangeSets is the name of the ConfigMap of halt records
	// (--change-sets), in the digest key's namespace; Lease is the leader
	// election Lease's name (--leader-election-id), in its own namespace.
	ChangeSets, Lease string
	// MetricsSecure is --metrics-secure (off unless given, as cmd/reroll
	// has it); MetricsTokenSecret is NAMESPACE/NAME of the Secret holding
	// the bearer token secure metrics accept (--digest-key-namespace and
	// --metrics-token-secret), "" when the API server authorizes scrapers
	// instead; MetricsPort is the port of --metrics-bind-address ("9090"
	// by default).
	MetricsSecure                   bool
	MetricsTokenSecret, MetricsPort string
}

// parseControllerConfig reads a Reroll container's arguments and
// environment (env, as given in the pod spec) as cmd/reroll reads them,
// for the flags that decide what rolls; namespace is the Deployment's.
// Flags it does not need are skipped. It fails on a value cmd/reroll would
// refuse too (a malformed selector).
func parseControllerConfig(args []string, env map[string]string, namespace string) (controllerConfig, error) {
	fs := pflag.NewFlagSet("reroll", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(discard{})
	d := annotation.DefaultNames()
	cfg := controllerConfig{Names: d}
	for name, p := range map[string]*string{
		"configmap-annotation": &cfg.Names.ConfigMapReload, "secret-annotation": &cfg.Names.SecretReload,
		"auto-annotation": &cfg.Names.Auto, "configmap-auto-annotation": &cfg.Names.ConfigMapAuto,
		"secret-auto-annotation": &cfg.Names.SecretAuto, "auto-search-annotation": &cfg.Names.Search,
		"search-match-annotation": &cfg.Names.Match, "ignore-annotation": &cfg.Names.Ignore,
		"pause-deployment-annotation": &cfg.Names.PausePeriod, "pause-deployment-time-annotation": &cfg.Names.PausedAt,
		"spc-auto-annotation": &cfg.Names.SecretProviderClassAuto, "spc-annotation": &cfg.Names.SecretProviderClassReload,
	} {
		fs.StringVar(p, name, *p, "")
	}
	var onCreate, onDelete, keySecret, keyNamespace string
	var nsSel, resSel []string
	fs.BoolVar(&cfg.AutoReloadAll, "auto-reload-all", false, "")
	fs.StringVar(&onCreate, "reload-on-create", "", "")
	fs.StringVar(&onDelete, "reload-on-delete", "", "")
	fs.StringSliceVar(&cfg.ResourcesToIgnore, "resources-to-ignore", nil, "")
	fs.StringSliceVar(&cfg.IgnoredWorkloadTypes, "ignored-workload-types", nil, "")
	fs.StringSliceVar(&cfg.Namespaces, "namespaces", nil, "")
	fs.StringSliceVar(&cfg.IgnoredNamespaces, "namespaces-to-ignore", nil, "")
	fs.StringSliceVar(&nsSel, "namespace-selector", nil, "")
	fs.StringSliceVar(&resSel, "resource-label-selector", nil, "")
	fs.StringVar(&keySecret, "digest-key-secret", "reroll-digest-key", "")
	fs.StringVar(&keyNamespace, "digest-key-namespace", "", "")
	var installation, baselines string
	fs.StringVar(&installation, "installation-configmap", "reroll-installation", "")
	fs.StringVar(&baselines, "baselines", "reroll-baselines", "")
	deferRecord := true
	fs.BoolVar(&deferRecord, "defer-record", true, "")
	var whNamespace, whSecret string
	fs.BoolVar(&cfg.Webhook, "enable-webhook", false, "")
	fs.StringVar(&cfg.WebhookConfiguration, "webhook-configuration-name", "reroll", "")
	fs.StringVar(&whSecret, "webhook-cert-secret", "reroll-webhook-cert", "")
	fs.StringVar(&whNamespace, "webhook-namespace", "", "")
	fs.BoolVar(&cfg.Projections, "enable-projections", false, "")
	fs.StringVar(&cfg.ChangeSets, "change-sets", "reroll-change-sets", "")
	fs.StringVar(&cfg.Lease, "leader-election-id", "reroll-leader", "")
	var metricsToken, metricsAddr string
	fs.BoolVar(&cfg.MetricsSecure, "metrics-secure", false, "")
	fs.StringVar(&metricsToken, "metrics-token-secret", "", "")
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":9090", "")
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("reading Reroll's arguments: %w", err)
	}
	cfg.ReloadOnCreate, cfg.ReloadOnDelete = onCreate == "true", onDelete == "true"
	for i, v := range cfg.ResourcesToIgnore {
		cfg.ResourcesToIgnore[i] = strings.ToLower(strings.TrimSpace(v))
	}
	for i, v := range cfg.IgnoredWorkloadTypes {
		cfg.IgnoredWorkloadTypes[i] = strings.ToLower(strings.TrimSpace(v))
	}
	if len(cfg.Namespaces) == 0 && env["KUBERNETES_NAMESPACE"] != "" {
		// Reloader's watchGlobally: false, which Reroll reads too.
		cfg.Namespaces = []string{env["KUBERNETES_NAMESPACE"]}
	}
	var err error
	if v := strings.Join(nsSel, ","); selector.Unquote(v) != "" {
		if cfg.NamespaceSelector, err = selector.Parse("--namespace-selector", v); err != nil {
			return cfg, err
		}
	}
	if v := strings.Join(resSel, ","); selector.Unquote(v) != "" {
		if cfg.ResourceSelector, err = selector.Parse("--resource-label-selector", v); err != nil {
			return cfg, err
		}
	}
	if keyNamespace == "" {
		keyNamespace = env["POD_NAMESPACE"]
	}
	if keyNamespace == "" || strings.Contains(keyNamespace, "$(") {
		// POD_NAMESPACE from the downward API, or unset: Reroll's own.
		keyNamespace = namespace
	}
	cfg.DigestKeySecret = keyNamespace + "/" + keySecret
	if cfg.MetricsSecure && metricsToken != "" {
		cfg.MetricsTokenSecret = keyNamespace + "/" + metricsToken
	}
	cfg.MetricsPort = "9090"
	if _, port, err := net.SplitHostPort(metricsAddr); err == nil && port != "" {
		cfg.MetricsPort = port
	}
	cfg.Installation = keyNamespace + "/" + installation
	if baselines != "" && deferRecord && !cfg.Webhook && !cfg.ReloadOnDelete {
		cfg.Baselines = keyNamespace + "/" + baselines
	}
	if whNamespace == "" {
		whNamespace = namespace
	}
	cfg.WebhookCertSecret = whNamespace + "/" + whSecret
	return cfg, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// findController lists the Deployments that sel selects, in namespace (""
// for every namespace), and returns Reroll's: the one whose container runs
// the reroll binary (the container named "manager" or "reroll", else the
// first). It fails when there is none or more than one, saying which.
func findController(ctx context.Context, c client.Reader, namespace, sel string) (*rerollController, error) {
	s, err := labels.Parse(sel)
	if err != nil {
		return nil, fmt.Errorf("--reroll-selector: %w", err)
	}
	var list appsv1.DeploymentList
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: s}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing Deployments labelled %s: %w", sel, readError(err))
	}
	where := "any namespace"
	if namespace != "" {
		where = "namespace " + namespace
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no Deployment labelled %s in %s", sel, where)
	case 1:
	default:
		var names []string
		for _, d := range list.Items {
			names = append(names, d.Namespace+"/"+d.Name)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("several Deployments labelled %s (%s): choose one with --reroll-namespace", sel, strings.Join(names, ", "))
	}
	d := list.Items[0]
	ctr := rerollContainer(d.Spec.Template.Spec.Containers)
	if ctr == nil {
		return nil, fmt.Errorf("deployment %s/%s has no container", d.Namespace, d.Name)
	}
	cfg, err := containerConfig(ctr, d.Namespace)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	out := &rerollController{Namespace: d.Namespace, Name: d.Name, Image: ctr.Image, Version: imageTag(ctr.Image), Ready: d.Status.ReadyReplicas, Config: cfg,
		ServiceAccount: d.Spec.Template.Spec.ServiceAccountName}
	if out.ServiceAccount == "" {
		out.ServiceAccount = "default"
	}
	out.Replicas = 1
	if d.Spec.Replicas != nil {
		out.Replicas = *d.Spec.Replicas
	}
	return out, nil
}

// containerConfig reads the arguments and literal environment of a Reroll
// container ctr in namespace with parseControllerConfig.
func containerConfig(ctr *corev1.Container, namespace string) (controllerConfig, error) {
	env := map[string]string{}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	args := ctr.Args
	if len(args) == 0 && len(ctr.Command) > 1 {
		args = ctr.Command[1:]
	}
	return parseControllerConfig(args, env, namespace)
}

// rerollContainer returns the container named manager or reroll, else the
// first; nil when there is none.
func rerollContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == "manager" || cs[i].Name == "reroll" {
			return &cs[i]
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

// imageTag returns image's tag: "v0.1.0" of "ghcr.io/reroll/reroll:v0.1.0";
// "" for an image named by digest only, or without a tag.
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

// outOfScope returns "" when the controller watches obj's namespace and kind,
// else why it does not: a workload out of its scope never rolls.
func (c *rerollController) outOfScope(ns *corev1.Namespace, namespace, plural string) string {
	cfg := c.Config
	switch {
	case slices.Contains(cfg.IgnoredWorkloadTypes, plural):
		return "Reroll runs with --ignored-workload-types=" + strings.Join(cfg.IgnoredWorkloadTypes, ",")
	case len(cfg.Namespaces) > 0 && !slices.Contains(cfg.Namespaces, namespace):
		return "out of Reroll's scope: it watches only --namespaces=" + strings.Join(cfg.Namespaces, ",")
	case slices.Contains(cfg.IgnoredNamespaces, namespace):
		return "out of Reroll's scope: --namespaces-to-ignore=" + strings.Join(cfg.IgnoredNamespaces, ",")
	case cfg.NamespaceSelector != nil && ns != nil && !cfg.NamespaceSelector.Matches(labels.Set(ns.Labels)):
		return "out of Reroll's scope: the Namespace does not match --namespace-selector=" + cfg.NamespaceSelector.String()
	}
	return ""
}

// discover finds the Reroll controller (once per session) in
// --reroll-namespace, or in any namespace, and takes from its arguments
// every setting the user did not give the plugin: annotation names,
// --auto-reload-all, --reload-on-create/-delete, --resources-to-ignore,
// the digest key Secret, its scope (namespaces, --namespace-selector,
// --ignored-workload-types) and --resource-label-selector. It returns
// notes for the user: which Reroll answers, or why the defaults do.
func (s *session) discover(ctx context.Context) []string {
	if s.discovered {
		return nil
	}
	s.discovered = true
	if s.opts.NoDiscovery {
		return nil
	}
	c, err := findController(ctx, s.client, s.opts.RerollNamespace, s.opts.RerollSelector)
	if err != nil {
		return []string{fmt.Sprintf("could not find Reroll's controller (%v): answering as a Reroll with default flags would; give --reroll-namespace, or the controller's flags", err)}
	}
	s.ctrl = c
	changed := s.opts.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	set := &s.settings
	if !changed("auto-reload-all") {
		set.AutoReloadAll = c.Config.AutoReloadAll
	}
	if !changed("reload-on-create") {
		set.ReloadOnCreate = c.Config.ReloadOnCreate
	}
	if !changed("reload-on-delete") {
		set.ReloadOnDelete = c.Config.ReloadOnDelete
	}
	if !changed("installation") {
		set.Installation = c.Config.Installation
	}
	if !changed("baselines") {
		set.Baselines = c.Config.Baselines
	}
	if !changed("resources-to-ignore") && len(c.Config.ResourcesToIgnore) > 0 {
		set.ResourcesToIgnore = c.Config.ResourcesToIgnore[0]
	}
	s.planOptions.ReloadOnCreate, s.planOptions.ReloadOnDelete = set.ReloadOnCreate, set.ReloadOnDelete
	cfg, err := set.annotations()
	if err != nil {
		return []string{err.Error()}
	}
	cfg.Names = c.Config.Names
	s.planOptions.Annotations = cfg
	s.objects.selector = c.Config.ResourceSelector
	return nil
}

// scope returns why the controller never rolls t ("" when it may): its
// kind or namespace is out of the controller's scope.
func (s *session) scope(ctx context.Context, t target) string {
	if s.ctrl == nil {
		return ""
	}
	var ns *corev1.Namespace
	if s.ctrl.Config.NamespaceSelector != nil {
		n := &corev1.Namespace{}
		if err := s.client.Get(ctx, client.ObjectKey{Name: t.obj.GetNamespace()}, n); err == nil {
			ns = n
		}
	}
	return s.ctrl.outOfScope(ns, t.obj.GetNamespace(), workload.Plural(t.kind))
}

// locate fills in, for status and resume, what the user did not give:
// Reroll's namespace, its halt records' ConfigMap and its Lease, from the
// controller found by selector (in any namespace, or in the namespace
// given). Without a controller the flags' defaults stay. It returns the
// controller's namespace, "" when none was found.
func (s *session) locate(ctx context.Context, cmd interface{ Changed(string) bool }, selector string, cs *changeSetFlags, lease *string) string {
	if s.opts.NoDiscovery {
		return ""
	}
	where := ""
	if cmd.Changed("reroll-namespace") {
		where = cs.namespace
	}
	c, err := findController(ctx, s.client, where, selector)
	if err != nil {
		return ""
	}
	cs.namespace = c.Namespace
	if !cmd.Changed("change-sets") {
		// --change-sets lives in the digest key's namespace.
		ns, _, _ := strings.Cut(c.Config.DigestKeySecret, "/")
		cs.namespace, cs.prefix = ns, c.Config.ChangeSets
	}
	if lease != nil && !cmd.Changed("lease") {
		*lease = c.Config.Lease
	}
	return c.Namespace
}
