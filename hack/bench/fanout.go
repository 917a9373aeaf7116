package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reroll/reroll/internal/controller"
)

// Reroll's default client limits (--kube-api-qps, --kube-api-burst), which
// the fanout profile's baseline uses too unless -qps is given.
const (
	rerollQPS   = 50
	rerollBurst = 300
)

// fanoutResult is what the fanout profile measured: one ConfigMap read by
// every Deployment of the profile changes once.
type fanoutResult struct {
	Workloads int `json:"workloads"`
	// Workers is Reroll's --max-concurrent-reconciles; QPS its
	// --kube-api-qps (burst 300), which the baseline uses too.
	Workers int     `json:"workers"`
	QPS     float64 `json:"qps"`
	// Validators is how many Validators check the shared ConfigMap
	// (BENCH_VALIDATOR=1: one).
	Validators int `json:"validators"`
	// AllPatchedSeconds is from the change's answer to the last
	// Deployment's patched template.
	AllPatchedSeconds float64 `json:"allPatchedSeconds"`
	// RolloutsMin and RolloutsMax are the fewest and most template changes
	// a Deployment got; exactly 1 each is the goal.
	RolloutsMin int `json:"rolloutsMin"`
	RolloutsMax int `json:"rolloutsMax"`
	// Requests are Reroll's API requests for the change.
	Requests apiRequests `json:"requests"`
	// CPUSeconds is the CPU time Reroll used for the change
	// (process_cpu_seconds_total).
	CPUSeconds float64 `json:"cpuSeconds"`
	// BaselineSeconds is how long as many metadata PATCHes of the same
	// Deployments take from a client limited like Reroll's (QPS, burst
	// 300) on as many workers: the floor the client's QPS sets.
	BaselineSeconds float64 `json:"baselineSeconds"`
}

// fanout runs the fanout profile: Reroll records every Deployment, then
// the shared ConfigMap changes once; then, with Reroll stopped, the
// baseline PATCHes run.
// workers is Reroll's --max-concurrent-reconciles and qps its
// --kube-api-qps; 0 keeps Reroll's default.
func fanout(ctx context.Context, res *result, p profile, tr *tracker, ch *changer, cfg *rest.Config, rerollBin, kubeconfig, dir string, workers int, qps float64) error {
	var flags []string
	if qps > 0 {
		flags = append(flags, "--kube-api-qps="+strconv.FormatFloat(qps, 'f', -1, 64))
	} else {
		qps = rerollQPS
	}
	if workers > 0 {
		flags = append(flags, "--max-concurrent-reconciles="+strconv.Itoa(workers))
	} else {
		workers = controller.DefaultMaxConcurrentReconciles
	}
	validators := 0
	if withValidator() {
		logf("fanout: one Validator on the shared ConfigMap (%s=1)", validatorEnv)
		if err := installValidator(ctx, cfg); err != nil {
			return err
		}
		validators = 1
	}
	cold, b, err := startRun(ctx, tr, ch, rerollBin, kubeconfig, filepath.Join(dir, "reroll-fanout.log"), p, flags, nil)
	if err != nil {
		return err
	}
	res.Cold = *cold
	cpu := func() (float64, error) {
		s, err := b.reroll.scrape()
		return value(s, "process_cpu_seconds_total"), err
	}
	cpuBefore, err := cpu()
	if err != nil {
		b.reroll.stop()
		return err
	}
	logf("fanout: one ConfigMap read by %d Deployments changes", p.SharedDeployments)
	r, err := b.shared(ctx, p.sharedWorkloads())
	if err != nil {
		b.reroll.stop()
		return err
	}
	cpuAfter, err := cpu()
	b.reroll.stop()
	if err != nil {
		return err
	}
	f := &fanoutResult{
		Workloads: r.Workloads, Workers: workers, QPS: qps, Validators: validators, AllPatchedSeconds: r.AllPatchedSeconds,
		RolloutsMin: r.RolloutsMin, RolloutsMax: r.RolloutsMax, Requests: r.Requests, CPUSeconds: cpuAfter - cpuBefore,
	}
	logf("fanout: baseline of %d PATCHes at QPS %v, burst %d", p.SharedDeployments, qps, rerollBurst)
	if f.BaselineSeconds, err = baseline(ctx, cfg, p.sharedWorkloads(), workers, qps); err != nil {
		return err
	}
	res.Fanout = f
	return nil
}

// baseline PATCHes a label of each of ws from a client with qps and
// Reroll's default burst on workers goroutines, and returns the seconds it
// took. A label rolls nothing and Reroll is stopped, so only the client's
// limit and the API server's answer time count.
func baseline(ctx context.Context, cfg *rest.Config, ws []workload, workers int, qps float64) (float64, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = float32(qps), rerollBurst
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return 0, err
	}
	jobs := make([]func() error, 0, len(ws))
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, w := range ws {
		jobs = append(jobs, func() error {
			body := fmt.Sprintf(`{"metadata":{"labels":{"bench-baseline":%q}}}`, stamp)
			_, err := cs.AppsV1().Deployments(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
			return err
		})
	}
	start := time.Now()
	if err := runJobs(jobs, workers); err != nil {
		return 0, fmt.Errorf("baseline PATCH: %w", err)
	}
	return time.Since(start).Seconds(), nil
}
