package main

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/fairness"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// flags holds the raw command-line values. Names, types and defaults follow
// Stakater Reloader's flags, so its Deployment arguments work unchanged.
type flags struct {
	kubeconfig            string
	metricsAddr           string
	probeAddr             string
	logFormat             string
	logLevel              string
	reloadStrategy        string
	reloadOnCreate        reloaderBool
	reloadOnDelete        reloaderBool
	syncAfterRestart      bool
	autoReloadAll         bool
	names                 annotation.Names
	resourcesToIgnore     []string
	ignoredWorkloads      []string
	namespaces            []string
	namespacesToIgnore    []string
	namespaceSelector     []string
	resourceSelector      []string
	webhookURL            string
	webhookURLFile        string
	enableHA              bool
	leaderElection        leaderElectionFlags
	gracefulShutdown      time.Duration
	isArgoRollouts        reloaderBool
	workloads             []string
	evictOwners           []string
	cronJobTrigger        string
	recreateCompleted     bool
	coalesceWindow        time.Duration
	coalesceMaxWait       time.Duration
	maxConcurrent         int
	namespaceRate         float64
	namespaceBurst        int
	maxRollouts           int
	maxRolloutsPerNS      int
	rolloutTimeout        time.Duration
	rolloutOverride       string
	installationConfigMap string
	waitForRollout        bool
	versioned             bool
	autoUndo              bool
	pausePeriod           time.Duration
	kubeAPIQPS            float32
	kubeAPIBurst          int
	webhook               webhookFlags
	projections           projectionFlags
	metrics               metricsFlags
	enablePProf           bool
	pprofAddr             string
	enableCSI             bool
	podEviction           bool
	validation            bool
	// reloaderOnly holds the values of reloaderOnlyFlags, which are
	// accepted and ignored.
	reloaderOnly map[string]*string
	// set is the parsed flag set, to tell which flags were given.
	set                *pflag.FlagSet
	digestKeySecret    string
	digestKeyNamespace string
	keyedCompatHashes  bool
	allowCrossNS       bool
	jobJournal         string
	podRecords         string
	deferRecord        bool
	baselines          string
	// Safe delivery (internal/delivery).
	changeSets      string
	changeSetWindow time.Duration
	bakeTime        time.Duration
	haltAfter       int
	stormMax        int
	stormPeriod     time.Duration
	// version is --version: print the build and exit.
	version bool
}

// newFlagSet binds every flag to f.
func newFlagSet(f *flags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("reroll", pflag.ContinueOnError)
	fs.SortFlags = true
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses $KUBECONFIG, the in-cluster config, or ~/.kube/config.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":9090", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints; 0 disables them.")
	fs.StringVar(&f.logFormat, "log-format", "", `Log format: "json", or "" / "text" for human-readable lines.`)
	fs.StringVar(&f.logLevel, "log-level", "info", "Log level: trace, debug, info, warning, error, fatal or panic.")
	fs.StringVar(&f.reloadStrategy, "reload-strategy", string(trigger.Annotations), `How a rollout is triggered: "annotations" (a pod template annotation) or "env-vars" (Reloader's STAKATER_* env var).`)
	fs.Var(newReloaderBool(&f.reloadOnCreate), "reload-on-create", `Roll a workload when a ConfigMap or Secret it references is created: "true"; any other value is off (a string, as in Reloader, so "--reload-on-create true" works).`)
	fs.Var(newReloaderBool(&f.reloadOnDelete), "reload-on-delete", `Roll a workload when a ConfigMap or Secret it references is deleted: "true"; any other value is off (a string, as in Reloader).`)
	fs.BoolVar(&f.syncAfterRestart, "sync-after-restart", false, "Accepted for Reloader compatibility. Reroll always rolls, once, exactly the changes made while it was not running, and never the rest.")
	fs.BoolVar(&f.autoReloadAll, "auto-reload-all", false, `Treat every workload as if annotated auto "true", unless it says "false".`)
	d := annotation.DefaultNames()
	fs.StringVar(&f.names.ConfigMapReload, "configmap-annotation", d.ConfigMapReload, "Annotation listing ConfigMaps (regular expressions) that roll the workload.")
	fs.StringVar(&f.names.SecretReload, "secret-annotation", d.SecretReload, "Annotation listing Secrets (regular expressions) that roll the workload.")
	fs.StringVar(&f.names.Auto, "auto-annotation", d.Auto, "Annotation that rolls the workload on every referenced ConfigMap and Secret.")
	fs.StringVar(&f.names.ConfigMapAuto, "configmap-auto-annotation", d.ConfigMapAuto, "Annotation that rolls the workload on every referenced ConfigMap.")
	fs.StringVar(&f.names.SecretAuto, "secret-auto-annotation", d.SecretAuto, "Annotation that rolls the workload on every referenced Secret.")
	fs.StringVar(&f.names.Search, "auto-search-annotation", d.Search, "Annotation that rolls the workload on referenced objects carrying the match annotation.")
	fs.StringVar(&f.names.Match, "search-match-annotation", d.Match, "Annotation on a ConfigMap or Secret that makes it count for workloads with the search annotation.")
	fs.StringVar(&f.names.Ignore, "ignore-annotation", d.Ignore, "Annotation on a ConfigMap or Secret that makes it never roll anything.")
	fs.StringVar(&f.names.PausePeriod, "pause-deployment-annotation", d.PausePeriod, "Annotation on a Deployment: how long to keep it paused after each rollout.")
	fs.StringVar(&f.names.PausedAt, "pause-deployment-time-annotation", d.PausedAt, "Annotation Reroll writes on a Deployment it paused: when the pause began.")
	fs.StringVar(&f.names.SecretProviderClassAuto, "spc-auto-annotation", d.SecretProviderClassAuto, "With --enable-csi-integration: annotation that rolls the workload on every SecretProviderClass its CSI volumes mount (the flag of earlier Reloader releases).")
	fs.StringVar(&f.names.SecretProviderClassReload, "spc-annotation", d.SecretProviderClassReload, "With --enable-csi-integration: annotation listing SecretProviderClasses (regular expressions) that roll the workload (the flag of earlier Reloader releases).")
	fs.StringSliceVar(&f.resourcesToIgnore, "resources-to-ignore", nil, "Kinds never watched: configMaps, secrets.")
	fs.StringSliceVar(&f.ignoredWorkloads, "ignored-workload-types", nil, "Workload kinds never rolled: deployments, statefulsets, daemonsets, jobs, cronjobs, rollouts, deploymentconfigs, or the plural of a --workload kind.")
	fs.StringSliceVar(&f.namespaces, "namespaces", nil, "Only these namespaces are watched (default all; KUBERNETES_NAMESPACE also sets one).")
	fs.StringSliceVar(&f.namespacesToIgnore, "namespaces-to-ignore", nil, "Namespaces never watched (filtered by the API server).")
	fs.StringSliceVar(&f.namespaceSelector, "namespace-selector", nil, "Label selector of the namespaces whose workloads are rolled, e.g. 'team=a,env!=dev'; repeated, the selectors are ANDed (as in Reloader).")
	fs.StringSliceVar(&f.resourceSelector, "resource-label-selector", nil, "Label selector of the ConfigMaps and Secrets watched (filtered by the API server); others count as absent; repeated, the selectors are ANDed (as in Reloader).")
	fs.StringVar(&f.webhookURL, "webhook-url", "", "POST a JSON description of each change to this URL instead of rolling. The URL is a credential when it holds a token, and a flag is visible in the pod spec: prefer --webhook-url-file or the environment variable "+webhookURLEnv+" (the Helm chart fills it from a Secret). Only its scheme and host are ever shown.")
	fs.StringVar(&f.webhookURLFile, "webhook-url-file", "", "Read --webhook-url from this file (e.g. a mounted Secret key); surrounding whitespace is ignored.")
	fs.BoolVar(&f.enableHA, "enable-ha", false, "Run with leader election, so that several replicas can run and one acts.")
	fs.StringVar(&f.leaderElection.id, "leader-election-id", "reroll-leader", "With --enable-ha: name of the Lease, in POD_NAMESPACE; two installations in one namespace need two names (the Helm chart uses <release fullname>-leader).")
	fs.DurationVar(&f.gracefulShutdown, "graceful-shutdown-timeout", DefaultGracefulShutdownTimeout, "How long Reroll waits on SIGTERM for reconciles in progress to finish; keep the pod's terminationGracePeriodSeconds above it.")
	fs.DurationVar(&f.leaderElection.leaseDuration, "leader-election-lease-duration", 15*time.Second, "With --enable-ha: how long standbys wait after the last renewal before taking the Lease; the longest fail-over when the leader dies.")
	fs.DurationVar(&f.leaderElection.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "With --enable-ha: how long the leader keeps retrying to renew the Lease before it gives up leading (and exits); less than --leader-election-lease-duration.")
	fs.DurationVar(&f.leaderElection.retryPeriod, "leader-election-retry-period", 2*time.Second, "With --enable-ha: how often the leader renews, and standbys try to take, the Lease.")
	fs.Var(newReloaderBool(&f.isArgoRollouts), "is-Argo-Rollouts", `"true" requires Argo Rollouts (argoproj.io/v1alpha1 Rollout); otherwise they are handled when the API server serves them (a string, as in Reloader).`)
	fs.StringArrayVar(&f.workloads, "workload", nil, "An extra workload kind, repeatable: '<group>/<version>/<Kind>:<pod template path>' (e.g. 'apps.kruise.io/v1alpha1/CloneSet:spec.template'), or '<group>/<version>/<Kind>:annotations=<path>' for operators that copy an annotations map onto their pods.")
	fs.StringArrayVar(&f.evictOwners, "evict-owner", nil, "With --enable-pod-eviction: a kind of pod owner whose pods Reroll restarts by eviction, honouring PodDisruptionBudgets, repeatable: '<group>/<version>/<Kind>' (e.g. 'kafka.strimzi.io/v1beta2/StrimziPodSet'). Reroll reads references from the pods and needs get, list, watch and patch on the kind.")
	fs.BoolVar(&f.validation, "enable-validation", true, "Check the new content of every changed ConfigMap and Secret against the reroll.dev/v1alpha1 Validators of its namespace before anything rolls for it: content that fails a rule rolls nothing (hold reason invalid, Warning Event InvalidContent; see docs/validation.md). Needs the Validator CRD (without it, validation is off) and list and watch on validators.")
	fs.BoolVar(&f.podEviction, "enable-pod-eviction", false, "Restart by eviction the workloads annotated reroll.dev/restart: evict, the --evict-owner kinds and annotated pods (--pod-records). Reroll then watches and caches pods and needs list and watch on pods and create on pods/eviction; off, it never reads pods, and a workload that asks for eviction gets an EvictionDisabled Warning Event.")
	fs.StringVar(&f.cronJobTrigger, "cronjob-trigger", "", `What a change consumed by a CronJob does: "none" (its next scheduled Job reads the new data) or "job" (create a Job from its jobTemplate at once). Unset: "job" for CronJobs opted in with Reloader's annotations, as Reloader does, "none" for reroll.dev ones. The annotation reroll.dev/cronjob-trigger overrides it per CronJob.`)
	fs.DurationVar(&f.coalesceWindow, "coalesce-window", controller.DefaultCoalesceWindow, "Quiet time after the latest change to any ConfigMap or Secret a workload consumes before the workload is reconciled, so that a burst of changes rolls it once; 0 disables.")
	fs.DurationVar(&f.coalesceMaxWait, "coalesce-max-wait", controller.DefaultCoalesceMaxWait, "Longest a burst of changes holds a workload back: it is reconciled this long after the burst's first change even if changes go on; at least --coalesce-window.")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles, "How many workloads of each kind are reconciled at once.")
	fs.Float64Var(&f.namespaceRate, "namespace-reconcile-rate", fairness.DefaultRate, "Reconciles per second one namespace may queue, per controller (each workload kind, Projections), before its further ones wait behind every other namespace's, so that one tenant's flood of changes or many costly workloads delay that tenant only; averaged. Nothing is dropped, and a waiting reconcile runs as soon as nothing in budget is ready. 0 turns this off (first in, first out).")
	fs.IntVar(&f.namespaceBurst, "namespace-reconcile-burst", fairness.DefaultBurst, "Reconciles one namespace may queue at once, per controller, above --namespace-reconcile-rate, after a quiet time (a ConfigMap that 100 workloads of one namespace consume rolls them all at once).")
	fs.IntVar(&f.maxRollouts, "max-concurrent-rollouts", 0, "How many rollouts Reroll started may run at once, cluster-wide (until the workload's status reports them complete, or their deadline passes); further changes wait, oldest first. 0 is no bound; a Namespace's reroll.dev/max-concurrent-rollouts bounds its own.")
	fs.IntVar(&f.maxRolloutsPerNS, "max-concurrent-rollouts-per-namespace", 0, "With --max-concurrent-rollouts: how many of its slots one namespace may hold at once, so that one namespace cannot take them all; 0 is half of --max-concurrent-rollouts, rounded up. A Namespace's reroll.dev/max-concurrent-rollouts may lower it for that namespace, never raise it.")
	fs.DurationVar(&f.rolloutTimeout, "rollout-timeout", plan.DefaultRolloutTimeout, "How long a rollout Reroll started counts as running at most for --max-concurrent-rollouts: a workload's own progressDeadlineSeconds counts only when shorter. Also how long a waiting workload's signed reroll.dev/pending counts before Reroll signs it again (at least 10s).")
	fs.StringVar(&f.rolloutOverride, "rollout-override", string(plan.OverrideNamespace), `Where the annotation reroll.dev/rollout-override: "true" (roll at once, past every gate and the bound) is honoured: "namespace" (on a Namespace, for all its workloads; tenants with edit rights cannot annotate Namespaces), "workload" (on the workload too, as before this flag: whoever edits a workload may bypass every gate) or "off".`)
	fs.BoolVar(&f.waitForRollout, "wait-for-rollout", false, "A change that arrives while the workload's previous rollout is in progress waits for it, then rolls once; the annotation reroll.dev/wait-for-rollout overrides it per workload.")
	fs.BoolVar(&f.versioned, "versioned-config", false, `Pin every workload that says nothing (no reroll.dev/versioned on it or its Namespace) to immutable copies of the ConfigMaps and Secrets it consumes, one per content, so that old pods keep the old content and kubectl rollout undo restores it (docs/versioned-config.md). Needs create and patch on configmaps and secrets (Helm value versionedConfig.enabled).`)
	fs.BoolVar(&f.autoUndo, "versioned-config-auto-undo", true, "With safe delivery, undo a versioned workload's failed rollout (the breaker's signal) to its previous pinned revision, with a RolledBack Warning Event; the change set halts either way. Deployments (their ReplicaSets), StatefulSets and DaemonSets (their ControllerRevisions); needs list on replicasets and controllerrevisions (Helm value versionedConfig.enabled).")
	fs.DurationVar(&f.pausePeriod, "pause-period", 0, "Pause period of every workload that sets none: a Deployment stays paused this long after each rollout Reroll triggers; other kinds hold the rollout this long after the first change. 0 is none.")
	fs.Float32Var(&f.kubeAPIQPS, "kube-api-qps", 50, "Requests per second to each Kubernetes API resource (Deployments, Events, ...), averaged (client-side limit).")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 300, "Requests to each Kubernetes API resource allowed in a burst above --kube-api-qps.")
	fs.BoolVar(&f.recreateCompleted, "recreate-completed-jobs", false, `Whether Jobs that have finished are deleted and re-created too (running Jobs always are). Unset: yes for Jobs opted in with Reloader's annotations, as Reloader does, no for reroll.dev ones. The annotation reroll.dev/recreate-completed overrides it per Job.`)
	fs.BoolVar(&f.enablePProf, "enable-pprof", false, "Serve Go's net/http/pprof profiles under /debug/pprof/ on --pprof-addr (Reloader's flag). Off by default: a profile shows memory contents to whoever reaches the port. Allocations are sampled for heap profiles only while it is on.")
	fs.StringVar(&f.pprofAddr, "pprof-addr", ":6060", "Address of the pprof server with --enable-pprof.")
	fs.BoolVar(&f.version, "version", false, "Print Reroll's version, commit and build date, and exit.")
	fs.BoolVar(&f.enableCSI, "enable-csi-integration", false, "Roll workloads that mount a Secrets Store CSI Driver volume when the versions of the secrets it mounted change (SecretProviderClassPodStatus), as Reloader does; needs read access to secretproviderclasspodstatuses.")
	f.reloaderOnly = map[string]*string{}
	addReloaderOnlyFlags(fs, f.reloaderOnly)
	fs.StringVar(&f.digestKeySecret, "digest-key-secret", "reroll-digest-key", "Secret, in --digest-key-namespace, holding the installation key under which every digest Reroll writes is an HMAC-SHA-256; Reroll creates it with a random 256-bit key when it is absent. To rotate it, put the new key in data key \"key\" and the old one in \"previous\": records made under the old key are compared under it, then made again under the new one (docs/security.md).")
	fs.StringVar(&f.digestKeyNamespace, "digest-key-namespace", "", "Reroll's own namespace, where it keeps --digest-key-secret, --job-journal and --pod-records (default POD_NAMESPACE, else the pod's own namespace).")
	fs.StringVar(&f.installationConfigMap, "installation-configmap", "reroll-installation", "ConfigMap, in --digest-key-namespace, into which Reroll writes its installation time (data key installed-at) at start, so that kubectl reroll plan and why read it without access to the digest key Secret; empty writes none.")
	fs.StringVar(&f.jobJournal, "job-journal", "reroll-job-journal", "Name prefix of the ConfigMaps, in --digest-key-namespace, where Reroll keeps the manifest of each Job it re-creates from before the delete until the new Job exists (one signed ConfigMap per Job), so that a crash, a leader change or a failed create never loses the Job; empty keeps it in memory only.")
	fs.StringVar(&f.podRecords, "pod-records", "reroll-pod-records", "Name prefix of the ConfigMaps, in --digest-key-namespace, where Reroll keeps the record of each group of pods that opt in with their own annotations and whose owner is a kind Reroll does not handle (one signed ConfigMap per group, at most 256 per namespace; restarted by eviction, with --enable-pod-eviction); empty turns their restart off.")
	fs.BoolVar(&f.deferRecord, "defer-record", true, "Write no record (reroll.dev/observed) on a workload before its first rollout, so that installing Reroll writes no workload: first sight keeps the record in memory, a restart falls back on the first-sight rule, and a baseline the rule cannot stand in for (a key the workload does not read changed) is kept signed in --baselines. False records every workload on first sight (one PATCH each). Ignored with --reload-on-delete and --enable-webhook, which need the record on the workload.")
	fs.StringVar(&f.baselines, "baselines", "reroll-baselines", "Name prefix of the ConfigMaps, in --digest-key-namespace, where --defer-record keeps the signed baselines of workloads not rolled yet whose unread keys changed (one ConfigMap per namespace, written in batches, at most 900 KiB each); empty, or full, writes such a baseline on the workload as its record.")
	fs.StringVar(&f.changeSets, "change-sets", "reroll-change-sets", "Prefix of the ConfigMaps, in --digest-key-namespace, where Reroll keeps the halt record of each change set the circuit breaker halted (one per set, <prefix>-<set ID>, labelled reroll.dev/halt-records=<prefix>); empty turns safe delivery (waves, bake time, the breaker) off.")
	fs.DurationVar(&f.changeSetWindow, "change-set-window", delivery.DefaultWindow, "How long after a change set's first workload was seen its later waves wait for more workloads to join (copies of one object that a replicator writes in several namespaces).")
	fs.DurationVar(&f.bakeTime, "bake-time", delivery.DefaultBakeTime, "How long a wave's rollouts must stay healthy before the next wave of the change set starts, for workloads without reroll.dev/bake-time.")
	fs.IntVar(&f.haltAfter, "halt-after-failed-rollouts", delivery.DefaultHaltAfter, "Halt a change set once this many of its rollouts failed: no further workload rolls for it until kubectl reroll resume or a newer content; 0 turns the circuit breaker off.")
	fs.IntVar(&f.stormMax, "storm-max-rollouts", delivery.DefaultStormMax, "The storm breaker: a workload Reroll rolled this many times within --storm-period is held, with a RolloutStorm Warning Event, until the period lets it or kubectl reroll resume; 0 turns it off.")
	fs.DurationVar(&f.stormPeriod, "storm-period", delivery.DefaultStormPeriod, "The period of --storm-max-rollouts.")
	fs.BoolVar(&f.allowCrossNS, "allow-cross-namespace-references", false, "Follow references to ConfigMaps and Secrets of other namespaces (Wave's \"namespace/name\" extra lists). Off, they are refused with a Warning Event, so that a workload never carries digests of, nor rolls on, data in a namespace its owner may not read.")
	fs.BoolVar(&f.keyedCompatHashes, "keyed-compat-hashes", false, "Write keyed values (HMAC-SHA-256 under the installation key) in place of the hashes other tools define over the data: Reloader's SHA-1 (STAKATER_* env vars, last-reloaded-from, notifications), Wave's and SAP pod-reloader's config hashes. Those tools then no longer recognize them: switching back rolls once.")
	addWebhookFlags(fs, &f.webhook)
	addProjectionFlags(fs, &f.projections)
	addMetricsFlags(fs, &f.metrics)
	f.set = fs
	return fs
}

// recreateCompletedFlag returns --recreate-completed-jobs when it was given,
// and nil when the dialect decides.
func (f *flags) recreateCompletedFlag() *bool {
	if f.set == nil || !f.set.Changed("recreate-completed-jobs") {
		return nil
	}
	v := f.recreateCompleted
	return &v
}

// DefaultGracefulShutdownTimeout is --graceful-shutdown-timeout's default:
// below the 30 s that Kubernetes gives a pod by default, so that Reroll
// finishes (or abandons) its reconciles and hands over the Lease before the
// kubelet kills it.
const DefaultGracefulShutdownTimeout = 25 * time.Second

// workloadTypes are the names --ignored-workload-types accepts.
var workloadTypes = []string{"deployments", "statefulsets", "daemonsets", "jobs", "cronjobs", "rollouts", "deploymentconfigs"}

// ignorable returns the names --ignored-workload-types accepts: the
// built-in ones and the plural of each --workload kind.
func (f *flags) ignorable() []string {
	out := append([]string{}, workloadTypes...)
	for _, w := range f.workloads {
		if k, err := workload.ParseUnstructured(w); err == nil {
			out = append(out, workload.Plural(k))
		}
	}
	return out
}

// options validates f and returns the controller's options. Every unknown or
// malformed value is an error naming the flag; nothing falls back silently.
// env is the process environment (os.Getenv in production).
func (f *flags) options(env func(string) string) (controller.Options, error) {
	var errs []error
	strategy, err := trigger.ParseStrategy(f.reloadStrategy)
	if err != nil {
		errs = append(errs, fmt.Errorf("--reload-strategy: %w", err))
	}
	switch f.cronJobTrigger {
	case "", workload.CronJobTriggerNone, workload.CronJobTriggerJob:
	default:
		errs = append(errs, fmt.Errorf("--cronjob-trigger: unknown trigger %q (want none or job)", f.cronJobTrigger))
	}
	kinds := append(workload.Builtin(),
		workload.CronJob{Trigger: f.cronJobTrigger},
		workload.Job{RecreateCompleted: f.recreateCompletedFlag()},
		workload.ArgoRollout(),
		workload.DeploymentConfig(),
	)
	for _, w := range f.workloads {
		k, err := workload.ParseUnstructured(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("--workload: %w", err))
			continue
		}
		kinds = append(kinds, k)
	}
	var owners []workload.PodOwner
	for _, v := range f.evictOwners {
		k, err := workload.ParsePodOwner(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--evict-owner: %w", err))
			continue
		}
		owners = append(owners, k)
	}
	if len(f.evictOwners) > 0 && !f.podEviction {
		errs = append(errs, errors.New("--evict-owner: restarts by eviction are off; add --enable-pod-eviction"))
	}
	hook, err := f.notificationURL(env)
	if err != nil {
		errs = append(errs, err)
	}
	o := controller.Options{
		Kinds:       kinds,
		EvictOwners: owners,
		PodEviction: f.podEviction,
		Validate:    f.validation,
		PlanOptions: plan.Options{
			Strategy:                          strategy,
			ReloadOnCreate:                    f.reloadOnCreate.on(),
			ReloadOnDelete:                    f.reloadOnDelete.on(),
			Annotations:                       annotation.Config{Names: f.names, AutoReloadAll: f.autoReloadAll, SecretProviderClasses: f.enableCSI},
			WebhookURL:                        hook,
			KeyedCompatHashes:                 f.keyedCompatHashes,
			AllowCrossNamespaceReferences:     f.allowCrossNS,
			MaxConcurrentRollouts:             f.maxRollouts,
			MaxConcurrentRolloutsPerNamespace: f.maxRolloutsPerNS,
			RolloutTimeout:                    f.rolloutTimeout,
			WaitForRollout:                    f.waitForRollout,
			Versioned:                         f.versioned,
			NoAutoUndo:                        !f.autoUndo,
			PausePeriod:                       f.pausePeriod,
		},
		CoalesceWindow:          f.coalesceWindow,
		CoalesceMaxWait:         f.coalesceMaxWait,
		MaxConcurrentReconciles: f.maxConcurrent,
		Fairness:                fairness.Options{Rate: f.namespaceRate, Burst: f.namespaceBurst, Off: f.namespaceRate == 0},
		ChangeSetWindow:         f.changeSetWindow,
		BakeTime:                f.bakeTime,
		HaltAfterFailedRollouts: f.haltAfter,
		Storm:                   delivery.Storm{Max: f.stormMax, Period: f.stormPeriod},
		Admission:               controller.AdmissionOptions{Enabled: f.webhook.enabled},
	}
	if f.coalesceWindow < 0 {
		errs = append(errs, fmt.Errorf("--coalesce-window: %s is negative", f.coalesceWindow))
	}
	if f.coalesceMaxWait < 0 {
		errs = append(errs, fmt.Errorf("--coalesce-max-wait: %s is negative", f.coalesceMaxWait))
	}
	if f.namespaceRate < 0 || math.IsNaN(f.namespaceRate) || math.IsInf(f.namespaceRate, 0) {
		errs = append(errs, fmt.Errorf("--namespace-reconcile-rate: %v is not a number of reconciles per second (0 or more)", f.namespaceRate))
	}
	if f.namespaceBurst < 1 {
		errs = append(errs, fmt.Errorf("--namespace-reconcile-burst: %d is not a positive number", f.namespaceBurst))
	}
	if f.maxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles: %d is not a positive number", f.maxConcurrent))
	}
	if f.maxRolloutsPerNS < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-rollouts-per-namespace: %d is negative", f.maxRolloutsPerNS))
	}
	if scope, err := plan.ParseOverrideScope(f.rolloutOverride); err != nil {
		errs = append(errs, fmt.Errorf("--rollout-override: %w", err))
	} else {
		o.Override = scope
	}
	if f.maxRollouts < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-rollouts: %d is negative", f.maxRollouts))
	}
	if f.haltAfter < 0 {
		errs = append(errs, fmt.Errorf("--halt-after-failed-rollouts: %d is negative", f.haltAfter))
	}
	if f.bakeTime < 0 || f.changeSetWindow < 0 {
		errs = append(errs, fmt.Errorf("--bake-time and --change-set-window must not be negative"))
	}
	if f.rolloutTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--rollout-timeout: %s is not positive", f.rolloutTimeout))
	}
	if f.pausePeriod < 0 {
		errs = append(errs, fmt.Errorf("--pause-period: %s is negative", f.pausePeriod))
	}
	if f.kubeAPIQPS <= 0 || f.kubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive (got %v and %d)", f.kubeAPIQPS, f.kubeAPIBurst))
	}
	for _, v := range f.resourcesToIgnore {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "configmaps":
			o.Annotations.IgnoreConfigMaps = true
		case "secrets":
			o.Annotations.IgnoreSecrets = true
		default:
			errs = append(errs, fmt.Errorf("--resources-to-ignore: unknown resource %q (want configMaps or secrets)", v))
		}
	}
	if o.Annotations.IgnoreConfigMaps && o.Annotations.IgnoreSecrets {
		errs = append(errs, errors.New("--resources-to-ignore: ignoring both configMaps and secrets leaves nothing to watch"))
	}
	for _, v := range f.ignoredWorkloads {
		v = strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(f.ignorable(), v) {
			errs = append(errs, fmt.Errorf("--ignored-workload-types: unknown workload type %q (want one of %s)", v, strings.Join(f.ignorable(), ", ")))
			continue
		}
		o.IgnoredWorkloads = append(o.IgnoredWorkloads, v)
	}
	o.Scope.Namespaces = clean(f.namespaces)
	if ns := strings.TrimSpace(env("KUBERNETES_NAMESPACE")); ns != "" {
		if len(o.Scope.Namespaces) > 0 && !slices.Equal(o.Scope.Namespaces, []string{ns}) {
			errs = append(errs, fmt.Errorf("KUBERNETES_NAMESPACE=%s and --namespaces=%s disagree; set one", ns, strings.Join(o.Scope.Namespaces, ",")))
		}
		o.Scope.Namespaces = []string{ns}
	}
	o.Scope.IgnoredNamespaces = clean(f.namespacesToIgnore)
	for _, ns := range o.Scope.IgnoredNamespaces {
		if slices.Contains(o.Scope.Namespaces, ns) {
			errs = append(errs, fmt.Errorf("namespace %s is both watched and ignored", ns))
		}
	}
	if nsSel := strings.Join(f.namespaceSelector, ","); unquote(nsSel) != "" {
		sel, err := parseSelector("--namespace-selector", nsSel)
		if err != nil {
			errs = append(errs, err)
		}
		o.Scope.NamespaceSelector = sel
	}
	if resSel := strings.Join(f.resourceSelector, ","); unquote(resSel) != "" {
		sel, err := parseSelector("--resource-label-selector", resSel)
		if err != nil {
			errs = append(errs, err)
		}
		o.Scope.ResourceSelector = sel
	}
	if f.enablePProf && strings.TrimSpace(f.pprofAddr) == "" {
		errs = append(errs, errors.New("--pprof-addr: an address is required with --enable-pprof"))
	}
	if o.WebhookURL != "" && !isHTTPURL(o.WebhookURL) {
		// The value may be a credential: never repeat it.
		errs = append(errs, errors.New("--webhook-url: the value is not an http or https URL"))
	}
	names := map[string]string{
		"--configmap-annotation": f.names.ConfigMapReload, "--secret-annotation": f.names.SecretReload,
		"--auto-annotation": f.names.Auto, "--configmap-auto-annotation": f.names.ConfigMapAuto,
		"--secret-auto-annotation": f.names.SecretAuto, "--auto-search-annotation": f.names.Search,
		"--search-match-annotation": f.names.Match, "--ignore-annotation": f.names.Ignore,
		"--pause-deployment-annotation": f.names.PausePeriod, "--pause-deployment-time-annotation": f.names.PausedAt,
		"--spc-auto-annotation": f.names.SecretProviderClassAuto, "--spc-annotation": f.names.SecretProviderClassReload,
	}
	for _, flag := range slices.Sorted(maps.Keys(names)) {
		if strings.TrimSpace(names[flag]) == "" {
			errs = append(errs, fmt.Errorf("%s: an annotation name is required", flag))
		}
	}
	if f.enableHA && env("POD_NAMESPACE") == "" && !inCluster() {
		errs = append(errs, errors.New("--enable-ha: set POD_NAMESPACE to the namespace for the leader election Lease"))
	}
	errs = append(errs, f.leaderElection.validate()...)
	errs = append(errs, f.webhook.validate(env)...)
	if f.digestKeyNamespace == "" {
		f.digestKeyNamespace = ownNamespace(env)
	}
	alerter, err := alerterFromEnv(env)
	if err != nil {
		errs = append(errs, err)
	} else if alerter != nil {
		o.Alerter = alerter
	}
	return o, errors.Join(errs...)
}

// alerterFromEnv reads Reloader's alert variables: nil unless ALERT_ON_RELOAD
// is "true"; an error naming the variable when the sink or a URL is
// malformed.
func alerterFromEnv(env func(string) string) (*notify.Sender, error) {
	if on := strings.TrimSpace(env("ALERT_ON_RELOAD")); !strings.EqualFold(on, "true") {
		return nil, nil
	}
	var errs []error
	sink, err := notify.ParseSink(env("ALERT_SINK"))
	if err != nil {
		errs = append(errs, fmt.Errorf("ALERT_SINK: %w", err))
	}
	hook := strings.TrimSpace(env("ALERT_WEBHOOK_URL"))
	if !isHTTPURL(hook) {
		// Never print the value: Slack's and Teams' URLs hold a token.
		errs = append(errs, errors.New("ALERT_WEBHOOK_URL: an http or https URL is required when ALERT_ON_RELOAD is true"))
	}
	cfg := notify.Config{Sink: sink, URL: hook, AdditionalInfo: env("ALERT_ADDITIONAL_INFO"), Log: ctrl.Log.WithName("alert")}
	if p := strings.TrimSpace(env("ALERT_WEBHOOK_PROXY")); p != "" {
		u, err := url.Parse(p)
		if err != nil || !isHTTPURL(p) {
			errs = append(errs, errors.New("ALERT_WEBHOOK_PROXY: not an http or https URL"))
		}
		cfg.Proxy = u
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return notify.NewSender(cfg), nil
}

// webhookURLEnv is the environment variable that may hold --webhook-url.
const webhookURLEnv = "REROLL_WEBHOOK_URL"

// notificationURL returns the notification endpoint's URL from the one
// source set: --webhook-url, --webhook-url-file or webhookURLEnv; "" when
// none is. Errors never contain the URL.
func (f *flags) notificationURL(env func(string) string) (string, error) {
	var set []string
	hook := f.webhookURL
	if hook != "" {
		set = append(set, "--webhook-url")
	}
	if f.webhookURLFile != "" {
		set = append(set, "--webhook-url-file")
		b, err := os.ReadFile(f.webhookURLFile)
		if err != nil {
			return "", fmt.Errorf("--webhook-url-file: %w", err)
		}
		hook = strings.TrimSpace(string(b))
	}
	if v := strings.TrimSpace(env(webhookURLEnv)); v != "" {
		set = append(set, webhookURLEnv)
		hook = v
	}
	if len(set) > 1 {
		return "", fmt.Errorf("the notification endpoint's URL is set by %s: set one", strings.Join(set, " and "))
	}
	return hook, nil
}

// isHTTPURL reports whether s is an absolute http or https URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// leaderElectionFlags are the Lease timings of --enable-ha, passed to
// controller-runtime's LeaseDuration, RenewDeadline and RetryPeriod. The
// defaults are controller-runtime's (and client-go's usual 15s/10s/2s).
type leaderElectionFlags struct {
	// id is the name of the Lease (--leader-election-id).
	id                                        string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

// validate applies client-go's leaderelection checks up front, so that a
// bad combination is a flag error rather than a failure at start.
func (l leaderElectionFlags) validate() []error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"--leader-election-lease-duration": l.leaseDuration,
		"--leader-election-renew-deadline": l.renewDeadline,
		"--leader-election-retry-period":   l.retryPeriod,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not positive", name, d))
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return errs
	}
	if problems := validation.IsDNS1123Subdomain(l.id); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("--leader-election-id: %q is not a valid Lease name: %s", l.id, strings.Join(problems, "; ")))
	}
	if l.renewDeadline >= l.leaseDuration {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be less than --leader-election-lease-duration (%s)", l.renewDeadline, l.leaseDuration))
	}
	// client-go jitters each retry by up to 20% (leaderelection.JitterFactor).
	if l.renewDeadline <= time.Duration(leaderelection.JitterFactor*float64(l.retryPeriod)) {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be more than 1.2 times --leader-election-retry-period (%s)", l.renewDeadline, l.retryPeriod))
	}
	return errs
}

// clean trims entries and drops empty ones.
func clean(in []string) []string {
	var out []string
	for _, v := range in {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// inCluster reports whether the process runs in a pod, where
// controller-runtime finds the leader election namespace itself.
// serviceAccountNamespaceFile is where the kubelet puts the pod's namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace returns Reroll's own namespace: POD_NAMESPACE (the chart and
// the Kustomize manifests set it), else the namespace of the pod's
// ServiceAccount token (so the image starts under any chart, Reloader's
// included), else "" outside a pod.
func ownNamespace(env func(string) string) string {
	if ns := env("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func inCluster() bool {
	_, err := os.Stat(serviceAccountNamespaceFile)
	return err == nil
}
