package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/projection"
)

// projectionFlags are the flags of the Projection controller
// (docs/projections.md).
type projectionFlags struct {
	enabled        bool
	serviceAccount string
	keyFile        string
	rewrites       int
	window         time.Duration
	workers        int
	clusterScoped  bool
}

func addProjectionFlags(fs *pflag.FlagSet, f *projectionFlags) {
	d := projection.DefaultOptions()
	fs.BoolVar(&f.enabled, "enable-projections", false, "Reconcile reroll.dev/v1alpha1 Projections, which keep fields of custom resources equal to ConfigMap and Secret values (see docs/projections.md). Needs the Projection CRD and impersonate on serviceaccounts.")
	fs.StringVar(&f.serviceAccount, "projection-service-account", d.DefaultServiceAccount, "ServiceAccount, in each Projection's namespace, that Reroll impersonates for Projections without spec.serviceAccountName.")
	fs.StringVar(&f.keyFile, "projection-key-file", "", "File holding the key (at least 32 bytes) of the HMAC-SHA-256 digests that Projections write; empty derives it from the installation key (--digest-key-secret). A change of key changes every digest once.")
	fs.IntVar(&f.rewrites, "projection-conflict-rewrites", d.Conflict.Rewrites, "How many rewrites of a projected field by another field manager Reroll writes back within --projection-conflict-window; one more stops the Projection with Ready=False, reason Conflict.")
	fs.IntVar(&f.workers, "projection-workers", 2, fmt.Sprintf("How many Projections are reconciled at once, 1 to %d.", projection.MaxWorkers))
	fs.BoolVar(&f.clusterScoped, "projection-allow-cluster-scoped-targets", false, "Let Projections write cluster-scoped objects. Off by default: a Projection writes only objects of its own namespace.")
	fs.DurationVar(&f.window, "projection-conflict-window", d.Conflict.Window, "The window over which rewrites of a projected field by another field manager are counted.")
}

// options validates the flags and returns the controller's options; the
// key is read from --projection-key-file, or left nil for main to derive
// from the installation key.
func (f *projectionFlags) options() (projection.Options, error) {
	o := projection.DefaultOptions()
	if !f.enabled {
		return o, nil
	}
	var errs []error
	if f.serviceAccount == "" {
		errs = append(errs, errors.New("--projection-service-account: a name is required"))
	}
	if f.rewrites <= 0 {
		errs = append(errs, fmt.Errorf("--projection-conflict-rewrites: %d is not positive", f.rewrites))
	}
	if f.window <= 0 {
		errs = append(errs, fmt.Errorf("--projection-conflict-window: %s is not positive", f.window))
	}
	if f.workers < 1 || f.workers > projection.MaxWorkers {
		errs = append(errs, fmt.Errorf("--projection-workers: %d is not between 1 and %d", f.workers, projection.MaxWorkers))
	}
	if f.keyFile == "" {
		// Derived from the installation key once it is loaded (main).
	} else if key, err := os.ReadFile(f.keyFile); err != nil {
		errs = append(errs, fmt.Errorf("--projection-key-file: %w", err))
	} else if key = bytes.TrimRight(key, "\r\n"); len(key) < 32 {
		// Never print the key.
		errs = append(errs, fmt.Errorf("--projection-key-file: the key holds %d bytes, want at least 32", len(key)))
	} else {
		o.Key = key
	}
	o.DefaultServiceAccount = f.serviceAccount
	o.Conflict = projection.ConflictLimits{Rewrites: f.rewrites, Window: f.window}
	o.Workers, o.AllowClusterScopedTargets = f.workers, f.clusterScoped
	return o, errors.Join(errs...)
}

// setupProjections adds the Projection controller when enabled and the API
// server serves Projections; without the CRD it says so and Reroll goes on
// rolling workloads.
func setupProjections(mgr ctrl.Manager, f projectionFlags, opts projection.Options) error {
	if !f.enabled {
		return nil
	}
	gk := rerollv1alpha1.GroupVersion.WithKind("Projection").GroupKind()
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, rerollv1alpha1.GroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.Log.Info("Not reconciling Projections: the API server serves no reroll.dev/v1alpha1 Projection; install the CRD (config/crd or the Helm chart)")
			return nil
		}
		return fmt.Errorf("looking up the Projection API: %w", err)
	}
	if err := projection.Setup(mgr, opts, ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("setting up the Projection controller: %w", err)
	}
	return nil
}
