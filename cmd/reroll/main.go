// Command reroll is the Reroll controller: it rolls Deployments,
// StatefulSets and DaemonSets when the ConfigMap and Secret data they consume
// changes. This file only turns flags into options and starts the manager.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/spf13/pflag"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/certexpiry"
	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/events"
	"github.com/reroll/reroll/internal/idlegc"
	"github.com/reroll/reroll/internal/lazysink"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/metricsauth"
	"github.com/reroll/reroll/internal/projection"
	"github.com/reroll/reroll/internal/state"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/internal/throttle"
	"github.com/reroll/reroll/internal/version"
	"github.com/reroll/reroll/internal/workload"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reroll:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	f, opts, err := configure(args, os.Getenv)
	if errors.Is(err, pflag.ErrHelp) {
		return nil
	}
	if f == nil {
		return err
	}
	if f.version {
		fmt.Println("reroll", version.Get())
		return nil
	}
	setMemProfileRate(f.enablePProf)
	logger, lerr := newLogger(f.logFormat, f.logLevel)
	if lerr != nil {
		return errors.Join(lerr, err)
	}
	ctrl.SetLogger(logger)
	// client-go's informers (the store's and the cache's) report list and
	// watch failures, a forbidden namespace for one, through klog: into
	// the same log, in the same format.
	klog.SetLogger(logger.WithName("client-go"))
	if err != nil {
		return err
	}
	projectionOpts, err := f.projections.options()
	if err != nil {
		return err
	}
	projectionOpts.IgnoreSecrets, projectionOpts.IgnoreConfigMaps = opts.Annotations.IgnoreSecrets, opts.Annotations.IgnoreConfigMaps
	projectionOpts.Fairness = opts.Fairness
	for _, name := range unimplemented(f.set) {
		warn(logger, "Ignoring a Reloader flag that Reroll does not implement", "flag", name)
	}
	for _, fl := range f.offReloaderBools() {
		warn(logger, `A Reloader flag has a value other than "true" or "false": it is off, as in Reloader`, "flag", fl.Name, "value", fl.Value.String())
	}
	requests := metrics.NewRequestCounter()
	cfg, err := f.restConfig(requests.Wrap)
	if err != nil {
		return err
	}
	controller.PreferProtobuf(cfg)
	if err := ctrlmetrics.Registry.Register(requests); err != nil {
		return fmt.Errorf("registering the request metrics: %w", err)
	}
	if os.Getenv(metrics.MetricsByNamespaceEnv) == "enabled" {
		if err := metrics.RegisterReloaderByNamespace(ctrlmetrics.Registry); err != nil {
			return fmt.Errorf("registering the metrics by namespace: %w", err)
		}
	}

	scheme, err := newScheme()
	if err != nil {
		return err
	}
	// The digest key, before the cache starts: the cache digests every value
	// under it.
	if f.digestKeyNamespace == "" || f.digestKeySecret == "" {
		return errors.New("--digest-key-secret: set --digest-key-namespace or POD_NAMESPACE (Reroll keeps its digest key in a Secret there)")
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	keyCtx, cancelKey := context.WithTimeout(context.Background(), time.Minute)
	if f.jobJournal != "" {
		opts.JobJournal = types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.jobJournal}
	}
	if f.changeSets != "" {
		opts.ChangeSets = types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.changeSets}
	}
	if f.podRecords != "" {
		opts.PodRecords = types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.podRecords}
	}
	opts.DeferRecord = f.deferRecord
	if f.baselines != "" {
		opts.Baselines = types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.baselines}
	}
	keySecret := types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.digestKeySecret}
	opts.Key, err = state.LoadDigestKey(keyCtx, direct, keySecret)
	if err == nil {
		// Durable and shared by the replicas: the first-sight rule rolls
		// only what changed after it.
		opts.InstalledAt, err = state.LoadInstalledAt(keyCtx, direct, keySecret, time.Now())
	}
	if err == nil && f.installationConfigMap != "" {
		// Readable without the key: for kubectl reroll plan and why.
		err = state.PublishInstalledAt(keyCtx, direct, types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.installationConfigMap}, opts.InstalledAt)
	}
	if err == nil {
		// Written once: records of the legacy digest scheme are compared
		// only until then.
		opts.LegacyRecordsUntil, err = state.LoadLegacyRecordsUntil(keyCtx, direct, keySecret, time.Now())
	}
	if err == nil {
		// Written once: state signed under the v1 key derivation verifies
		// (and is signed again) only until then.
		var until time.Time
		until, err = state.LoadV1DerivationsUntil(keyCtx, direct, keySecret, time.Now())
		opts.Key = opts.Key.WithV1DerivationsUntil(until)
	}
	var metricsToken []byte
	if err == nil && f.metrics.tokenSecret != "" {
		if !f.metrics.secure {
			err = errors.New("--metrics-token-secret protects the secure metrics server only: add --metrics-secure=true, or drop --metrics-token-secret to serve plain HTTP")
		} else {
			metricsToken, err = metricsauth.LoadToken(keyCtx, direct, types.NamespacedName{Namespace: f.digestKeyNamespace, Name: f.metrics.tokenSecret})
		}
	}
	cancelKey()
	if err != nil {
		return err
	}
	if projectionOpts.Key == nil {
		// The v1 derivation: Projections project digests under this key
		// into objects that may roll on a change (digest.Key.DeriveV1).
		projectionOpts.Key = opts.Key.DeriveV1("projection")
	}
	// The cache takes its initial list's workloads from arrays until it
	// has synced (blocksUntilSynced).
	opts.InitialList = &compact.Blocks{}
	mo := opts.ManagerOptions()
	mo.Scheme = scheme
	mo.Metrics = f.metrics.serverOptions(f.metricsAddr, metricsToken)
	mo.HealthProbeBindAddress = f.probeAddr
	mo.LeaderElection = f.enableHA
	mo.LeaderElectionID = f.leaderElection.id
	mo.GracefulShutdownTimeout = &f.gracefulShutdown
	mo.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	mo.LeaseDuration = &f.leaderElection.leaseDuration
	mo.RenewDeadline = &f.leaderElection.renewDeadline
	mo.RetryPeriod = &f.leaderElection.retryPeriod
	// Hand the Lease over at once on a clean shutdown.
	mo.LeaderElectionReleaseOnCancel = true
	var certsReady chan struct{}
	if f.webhook.enabled {
		if f.webhook.selfSignedCerts {
			certsReady = make(chan struct{})
		}
		mo.WebhookServer = f.webhook.server(certsReady)
	}
	mgr, err := events.NewManager(cfg, mo)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if f.webhook.enabled {
		// For the alert before the serving certificate expires.
		if err := ctrlmetrics.Registry.Register(certexpiry.Collector{Dir: f.webhook.certDir, Log: ctrl.Log.WithName("metrics")}); err != nil {
			return fmt.Errorf("registering the webhook certificate metric: %w", err)
		}
	}
	if f.webhook.enabled && f.webhook.selfSignedCerts {
		if err := f.webhook.addRotator(mgr, certsReady); err != nil {
			return fmt.Errorf("adding the webhook certificate rotation: %w", err)
		}
	}
	// ConfigMaps and Secrets: one store, shared by the workload and
	// Projection controllers and the readiness check.
	opts.Store, err = store.New(mgr.GetConfig(), opts.StoreOptions())
	if err != nil {
		return err
	}
	if err := mgr.Add(opts.Store); err != nil {
		return fmt.Errorf("adding the ConfigMap and Secret store: %w", err)
	}
	projectionOpts.Store = opts.Store
	ctx := ctrl.SetupSignalHandler()
	// Told when the controllers have looked at every cached workload once.
	opts.FirstPass = idlegc.NewFirstPass()
	if err := controller.Setup(ctx, mgr, opts); err != nil {
		return err
	}
	if err := setupProjections(mgr, f.projections, projectionOpts); err != nil {
		return err
	}
	if f.webhook.enabled && f.projections.enabled {
		// Reads only its requests: served even before the CRD is installed.
		projection.RegisterWebhook(mgr)
		// A Projection's author must be allowed to act as its ServiceAccount.
		projection.RegisterAuthorWebhook(mgr, mgr.GetClient(), projectionOpts.DefaultServiceAccount)
	}
	if err := blocksUntilSynced(mgr, opts.InitialList, mgr.GetCache().WaitForCacheSync); err != nil {
		return fmt.Errorf("adding the end of the initial list's blocks: %w", err)
	}
	if err := freeMemoryAfterSync(mgr, opts.Store, opts.FirstPass); err != nil {
		return fmt.Errorf("adding the memory release: %w", err)
	}
	if err := paceCollector(mgr); err != nil {
		return fmt.Errorf("adding the collector's pacer: %w", err)
	}
	if f.enablePProf {
		if err := mgr.Add(pprofServer{addr: f.pprofAddr}); err != nil {
			return fmt.Errorf("adding the pprof server: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	// Ready only once the informers hold a complete copy of the cluster, so
	// that no decision is made on a partial view.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		c, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(c) || !opts.Store.HasSynced() {
			return errors.New("informer caches are not synced yet")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if f.isArgoRollouts.on() {
		if _, err := mgr.GetRESTMapper().RESTMapping(workload.ArgoRollout().GVK.GroupKind(), "v1alpha1"); err != nil {
			return fmt.Errorf("--is-Argo-Rollouts: the API server does not serve argoproj.io/v1alpha1 Rollouts: %w", err)
		}
	}
	logger.Info("Starting Reroll", "version", version.Get().Version, "commit", version.Get().Commit, "reloadStrategy", string(opts.Strategy), "reloadOnCreate", opts.ReloadOnCreate,
		"reloadOnDelete", opts.ReloadOnDelete, "autoReloadAll", opts.Annotations.AutoReloadAll,
		"namespaces", opts.Scope.Namespaces, "namespacesToIgnore", opts.Scope.IgnoredNamespaces,
		"leaderElection", f.enableHA, "pod", os.Getenv("POD_NAME"), "digestKey", opts.Key.ID())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// newScheme returns client-go's scheme (clientgoscheme.Scheme, which its
// package fills with every built-in type when it is loaded, and
// controller-runtime's default) with the Secrets Store CSI Driver types and
// Reroll's own added; an error names a type that could not be registered.
// A second scheme of the same built-in types kept ~170 KB more heap for the
// life of the process (issue #36, docs/benchmarks.md).
func newScheme() (*runtime.Scheme, error) {
	scheme := clientgoscheme.Scheme
	if err := controller.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	if err := rerollv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	return scheme, nil
}

// configure parses args and builds the controller's options from them and
// env: everything run does before it talks to the API server. The flags are
// nil when args do not parse (pflag.ErrHelp for --help); otherwise err lists
// every malformed value, each naming its flag.
func configure(args []string, env func(string) string) (*flags, controller.Options, error) {
	f := &flags{}
	fs := newFlagSet(f)
	args, err := reloaderBoolArgs(fs, args)
	if err != nil {
		return nil, controller.Options{}, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, controller.Options{}, err
	}
	if fs.NArg() > 0 {
		return nil, controller.Options{}, fmt.Errorf("unexpected arguments %q; every setting is a --flag", fs.Args())
	}
	opts, err := f.options(env)
	return f, opts, err
}

// warn logs msg at zap's warning level when logger is backed by zap, and as
// an info line otherwise; logr itself has no warning level.
func warn(logger logr.Logger, msg string, keysAndValues ...any) {
	if u, ok := logger.GetSink().(zapr.Underlier); ok && u.GetUnderlying() != nil {
		u.GetUnderlying().Sugar().Warnw(msg, keysAndValues...)
		return
	}
	logger.Info(msg, keysAndValues...)
}

// restConfig is the client configuration of --kubeconfig with the
// client-side rate limit of --kube-api-qps and --kube-api-burst per API
// resource (throttle.Limits), taken in the transport of every client built
// from it. A kubeconfig leaves client-go at 5 requests per second, which
// would make a ConfigMap shared by 50 workloads take 10 s to roll.
//
// client-go's own per-client limiter is off (QPS -1, no RateLimiter, as
// controller-runtime's config.GetConfig leaves it): a request that waits in
// it more than 50 ms formats its URL for logging and metrics, which cost a
// 2,000-Deployment fan-out 0.05 to 0.3 s of CPU (issue #36). The transport
// wraps wrappers (innermost first, e.g. the request counter), so that they
// see only the requests the limit lets through, as with client-go's.
func (f *flags) restConfig(wrappers ...func(http.RoundTripper) http.RoundTripper) (*rest.Config, error) {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	for _, w := range wrappers {
		cfg.Wrap(w)
	}
	cfg.Wrap(throttle.New(f.kubeAPIQPS, f.kubeAPIBurst).Wrap)
	return cfg, nil
}

// restConfig loads the client configuration from path, or from the usual
// places when path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := config.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the Kubernetes client configuration: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading --kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// newLogger builds the zap logger for --log-format and --log-level. Reloader's
// levels map onto logr verbosity: trace and debug show V(1) lines, warning
// and above hide info lines.
//
// Repeated lines are sampled as controller-runtime's production logger
// does (the first 100 of a message per second, then one in 100), except
// controller.AuditMessages: every rollout leaves its line.
func newLogger(format, level string) (logr.Logger, error) {
	return newLoggerTo(os.Stderr, format, level)
}

// newLoggerTo is newLogger writing to w.
func newLoggerTo(w io.Writer, format, level string) (logr.Logger, error) {
	opts := zap.Options{}
	rfc3339 := func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.RFC3339TimeEncoder }
	switch format {
	case "json":
		zap.JSONEncoder(rfc3339)(&opts)
	case "", "text":
		zap.ConsoleEncoder(rfc3339)(&opts)
	default:
		return logr.Logger{}, fmt.Errorf("--log-format: unknown format %q (want \"json\" or \"text\")", format)
	}
	switch strings.ToLower(level) {
	case "trace", "debug":
		opts.Level = zapcore.Level(-1)
	case "info":
		opts.Level = zapcore.InfoLevel
	case "warning", "warn":
		opts.Level = zapcore.WarnLevel
	case "error":
		opts.Level = zapcore.ErrorLevel
	case "fatal", "panic":
		opts.Level = zapcore.FatalLevel
	default:
		return logr.Logger{}, fmt.Errorf("--log-level: unknown level %q (want trace, debug, info, warning, error, fatal or panic)", level)
	}
	sink := zapcore.Lock(zapcore.AddSync(w))
	base := zapcore.NewCore(&zap.KubeAwareEncoder{Encoder: opts.Encoder}, sink, opts.Level)
	core := auditCore{all: base, sampled: zapcore.NewSamplerWithOptions(base, time.Second, 100, 100), audit: controller.AuditMessages}
	// The pairs of WithValues reach zap with a line written, not at each
	// reconcile's WithValues (internal/lazysink).
	return lazysink.New(zapr.NewLogger(uzap.New(core, uzap.AddStacktrace(zapcore.ErrorLevel), uzap.ErrorOutput(sink)))), nil
}

// auditCore writes the entries whose message is one of audit through all,
// every one, and the others through sampled.
type auditCore struct {
	all, sampled zapcore.Core
	audit        []string
}

func (c auditCore) Enabled(l zapcore.Level) bool { return c.all.Enabled(l) }

func (c auditCore) With(fields []zapcore.Field) zapcore.Core {
	return auditCore{all: c.all.With(fields), sampled: c.sampled.With(fields), audit: c.audit}
}

func (c auditCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if slices.Contains(c.audit, e.Message) {
		return c.all.Check(e, ce)
	}
	return c.sampled.Check(e, ce)
}

// Write is reached only through the CheckedEntry of all or sampled.
func (c auditCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.all.Write(e, fields)
}

func (c auditCore) Sync() error { return c.all.Sync() }
