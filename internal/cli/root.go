package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/reroll/reroll/internal/annotation"
)

// Options are the flags every command shares.
type Options struct {
	// ConfigFlags are kubectl's connection flags (--kubeconfig, --context,
	// -n, ...).
	ConfigFlags *genericclioptions.ConfigFlags
	// AllNamespaces is -A.
	AllNamespaces bool
	// Settings are the behaviours Reroll runs with, which decide what rolls.
	// Those the user does not give are read from the controller's
	// arguments (session.discover).
	Settings Settings
	// RerollNamespace is --reroll-namespace: where to look for Reroll's
	// Deployment ("" for every namespace); RerollSelector its labels
	// (--reroll-selector). NoDiscovery is --discover=false.
	RerollNamespace, RerollSelector string
	NoDiscovery                     bool
	// changed reports whether the user gave a flag (set before a command
	// runs): a flag given wins over the controller's.
	changed func(name string) bool
	genericiooptions.IOStreams
}

// Settings mirror the controller flags that change Reroll's decisions. The
// plugin reads them from the running controller's arguments; one given here
// wins (for a controller the plugin cannot find or read).
type Settings struct {
	// AutoReloadAll is --auto-reload-all.
	AutoReloadAll bool
	// ReloadOnCreate and ReloadOnDelete are --reload-on-create and
	// --reload-on-delete.
	ReloadOnCreate, ReloadOnDelete bool
	// ResourcesToIgnore is --resources-to-ignore: "configMaps" or "secrets".
	ResourcesToIgnore string
	// Installation is NAMESPACE/NAME of Reroll's installation ConfigMap
	// (--digest-key-namespace, --installation-configmap), which holds the
	// installation time that the first-sight rule reads.
	Installation string
	// Baselines is NAMESPACE/PREFIX of the ConfigMaps where Reroll keeps
	// the baselines of workloads it has not rolled yet (--digest-key-namespace,
	// --baselines); "" reads none.
	Baselines string
	// digestKeySecret is the deprecated --digest-key-secret, ignored.
	digestKeySecret string
}

func (s *Settings) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&s.AutoReloadAll, "auto-reload-all", false, "Reroll runs with --auto-reload-all (by default read from the controller's arguments).")
	fs.BoolVar(&s.ReloadOnCreate, "reload-on-create", false, "Reroll runs with --reload-on-create (by default read from the controller's arguments).")
	fs.BoolVar(&s.ReloadOnDelete, "reload-on-delete", false, "Reroll runs with --reload-on-delete (by default read from the controller's arguments).")
	fs.StringVar(&s.ResourcesToIgnore, "resources-to-ignore", "", "Reroll runs with --resources-to-ignore (configMaps or secrets; by default read from the controller's arguments).")
	fs.StringVar(&s.Installation, "installation", "reroll-system/reroll-installation", "NAMESPACE/NAME of Reroll's installation ConfigMap: its data key installed-at is Reroll's installation time, which decides whether a workload Reroll has not recorded yet rolls (the first-sight rule). By default the controller's (--digest-key-namespace, --installation-configmap).")
	fs.StringVar(&s.Baselines, "baselines", "reroll-system/reroll-baselines", "NAMESPACE/PREFIX of the ConfigMaps where Reroll keeps the baselines of workloads it has not rolled yet (a workload whose unread keys changed before its first rollout): plan and why compare such a workload with its baseline, as with a record; empty reads none. By default the controller's (--digest-key-namespace, --baselines).")
	fs.StringVar(&s.digestKeySecret, "digest-key-secret", "", "Ignored: the installation time is read from --installation; the plugin never reads the digest key Secret.")
	_ = fs.MarkDeprecated("digest-key-secret", "use --installation; the plugin no longer reads the digest key Secret")
}

// annotations returns the annotation configuration the settings describe;
// it fails on an unknown --resources-to-ignore.
func (s Settings) annotations() (annotation.Config, error) {
	cfg := annotation.DefaultConfig()
	cfg.AutoReloadAll = s.AutoReloadAll
	switch strings.ToLower(s.ResourcesToIgnore) {
	case "":
	case "configmaps":
		cfg.IgnoreConfigMaps = true
	case "secrets":
		cfg.IgnoreSecrets = true
	default:
		return cfg, fmt.Errorf("--resources-to-ignore: unknown value %q (want configMaps or secrets)", s.ResourcesToIgnore)
	}
	return cfg, nil
}

// NewCommand returns `kubectl reroll` and its commands, writing to streams.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ConfigFlags: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "kubectl-reroll",
		Short: "Ask Reroll which workloads read a ConfigMap or Secret, why one rolled, and what a change would roll",
		Long: `kubectl reroll explains Reroll's decisions with your own credentials; only resume writes.

  who-uses configmap/NAME   every workload that reads it, how, which keys, and whether a change rolls it
  why KIND/NAME             a workload's record, its last rollouts, its trigger, what blocks it now
  plan -f FILE|DIR|-        what applying the ConfigMaps and Secrets in the manifests would roll now
  status                    Reroll's replicas, leader, queue and errors, workloads with invalid annotations, halted change sets
  status secret/NAME        versioned config: per version of a ConfigMap or Secret, the workloads and pods still on it
  resume KIND/NAME          continue the halted change set the object belongs to (writes its halt record)
  check                     preflight: controller running and ready, RBAC, CRDs, webhook certificate, versions
  validate -f FILE|DIR|-    check ConfigMaps and Secrets against the Validators' rules, offline (exit 1 on a failure)

  migrate-check -f FILE     what Reroll does with each key of a Reloader values file (or --from-cluster: a running Reloader)
  version                   the plugin's version and the controller's, with a warning on a skew

who-uses, why and plan follow the arguments of the Reroll Deployment they find (by label, in any
namespace, or --reroll-namespace): its annotation names, scope, selectors and digest key Secret.

Exit status 0, or 1 on an error: the API server cannot be reached, refuses the credentials,
or forbids every read the command needs. plan --fail-on-rollout exits 1 when something would
roll and 2 when it fails, as kubectl diff does; migrate-check 1 when something differs and 2
when it could not check; check 1 when a check failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			// kubectl shows "kubectl reroll" in the plugin's usage lines.
			cobra.CommandDisplayNameAnnotation: "kubectl reroll",
		},
	}
	// Help and completion candidates go to the command's streams.
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	o.ConfigFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Look in every namespace.")
	o.Settings.addFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.RerollNamespace, "reroll-namespace", "", "The namespace of Reroll's Deployment, whose arguments (annotation names, selectors, ignores, digest key Secret) the answers follow; by default it is looked for in every namespace.")
	cmd.PersistentFlags().StringVar(&o.RerollSelector, "reroll-selector", DefaultControllerSelector, "Label selector of Reroll's Deployment and pods.")
	var discover bool
	cmd.PersistentFlags().BoolVar(&discover, "discover", true, "Find Reroll's Deployment and answer with its arguments; false answers as a Reroll with default flags (or the flags given here).")
	for _, name := range []string{"namespace", "reroll-namespace"} {
		_ = cmd.RegisterFlagCompletionFunc(name, completeNamespaces(o))
	}
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		o.changed = c.Flags().Changed
		o.NoDiscovery = !discover
	}
	cmd.AddCommand(newWhoUses(o), newWhy(o), newPlan(o), newStatus(o), newResume(o), newCheck(o), newMigrateCheck(o), newValidate(o), newVersion(o))
	return cmd
}
