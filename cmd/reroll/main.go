// Command reroll is the Reroll controller: it rolls Deployments,
// StatefulSets and DaemonSets when the ConfigMap and Secret data they consume
// changes. This file only turns flags into options and starts the manager.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/trigger"
)

// flags holds the raw command-line values before validation.
type flags struct {
	kubeconfig     string
	metricsAddr    string
	probeAddr      string
	logFormat      string
	logLevel       string
	reloadStrategy string
	reloadOnCreate bool
	reloadOnDelete bool
	coalesceWindow time.Duration
	kubeAPIQPS     float32
	kubeAPIBurst   int
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reroll:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	setGCPercent()
	var f flags
	fs := pflag.NewFlagSet("reroll", pflag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty uses $KUBECONFIG, the in-cluster config, or ~/.kube/config")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":9090", "address of the Prometheus /metrics endpoint; 0 disables it")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints; 0 disables them")
	fs.StringVar(&f.logFormat, "log-format", "", `log format: "json", or "" / "text" for human-readable lines (Reloader's flag)`)
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: trace, debug, info, warning, error, fatal or panic (Reloader's values)")
	fs.StringVar(&f.reloadStrategy, "reload-strategy", string(trigger.Annotations), `how a rollout is triggered: "annotations" (pod template annotation reroll.dev/config-hash) or "env-vars" (Reloader's STAKATER_* env var)`)
	fs.BoolVar(&f.reloadOnCreate, "reload-on-create", false, "roll a workload when a ConfigMap or Secret it references is created")
	fs.BoolVar(&f.reloadOnDelete, "reload-on-delete", false, "roll a workload when a ConfigMap or Secret it references is deleted")
	fs.DurationVar(&f.coalesceWindow, "coalesce-window", controller.DefaultCoalesceWindow, "how long a ConfigMap or Secret change waits before its workloads are reconciled, so changes within it roll a workload once; 0 disables")
	fs.Float32Var(&f.kubeAPIQPS, "kube-api-qps", 50, "requests per second to the Kubernetes API, averaged (client-side limit)")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 300, "requests to the Kubernetes API allowed in a burst above --kube-api-qps")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}

	logger, err := newLogger(f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	strategy, err := trigger.ParseStrategy(f.reloadStrategy)
	if err != nil {
		return fmt.Errorf("--reload-strategy: %w", err)
	}
	if f.coalesceWindow < 0 {
		return fmt.Errorf("--coalesce-window: %s is negative", f.coalesceWindow)
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	// A kubeconfig leaves client-go at 5 requests per second, which would
	// make a ConfigMap shared by 50 workloads take 10 s to roll.
	cfg.QPS, cfg.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	requests := metrics.NewRequestCounter()
	cfg.Wrap(requests.Wrap)
	if err := ctrlmetrics.Registry.Register(requests); err != nil {
		return fmt.Errorf("registering the request metrics: %w", err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controller.Setup(ctx, mgr, controller.Options{
		Strategy:       strategy,
		ReloadOnCreate: f.reloadOnCreate,
		ReloadOnDelete: f.reloadOnDelete,
		CoalesceWindow: f.coalesceWindow,
	}); err != nil {
		return err
	}
	if err := freeMemoryAfterSync(mgr); err != nil {
		return fmt.Errorf("adding the memory release: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	// Ready only once the informers hold a complete copy of the cluster, so
	// that no decision is made on a partial view.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		c, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(c) {
			return errors.New("informer caches are not synced yet")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	logger.Info("Starting Reroll", "reloadStrategy", string(strategy), "reloadOnCreate", f.reloadOnCreate, "reloadOnDelete", f.reloadOnDelete)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
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
func newLogger(format, level string) (logr.Logger, error) {
	opts := zap.Options{TimeEncoder: zapcore.RFC3339TimeEncoder}
	switch format {
	case "json":
		zap.JSONEncoder()(&opts)
	case "", "text":
		zap.ConsoleEncoder()(&opts)
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
	return zap.New(zap.UseFlagOptions(&opts)), nil
}
