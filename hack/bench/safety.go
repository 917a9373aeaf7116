package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/reroll/reroll/internal/plan"
)

// sharedSecret is the one Secret the safety profile's Deployments read.
const sharedSecret = "shared-secret"

// safetyResult is what the safety profile measured: one Secret read by every
// Deployment of the profile changes once, with --max-concurrent-rollouts.
type safetyResult struct {
	Workloads int `json:"workloads"`
	Bound     int `json:"maxConcurrentRollouts"`
	// RolloutSeconds is how long the bench's simulated rollouts take.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// MaxRunning is the most rollouts running at once, over every watch
	// event of the namespace's Deployments in the API server's order.
	MaxRunning int `json:"maxRunning"`
	// AllDoneSeconds is from the change to the last rollout completed.
	AllDoneSeconds float64 `json:"allDoneSeconds"`
	// RolloutsMin and RolloutsMax are the fewest and most template changes
	// a Deployment got; exactly 1 each is the goal.
	RolloutsMin int `json:"rolloutsMin"`
	RolloutsMax int `json:"rolloutsMax"`
}

// rolloutSimulator stands in for the Deployment controller, which the
// bench does not run: a Deployment whose generation is ahead of its
// status.observedGeneration gets, after a fixed delay, a status that reports
// the rollout complete (observedGeneration caught up, zero replicas as the
// spec asks). It also counts, at every event, the rollouts Reroll started
// that are not complete, as Reroll defines them.
type rolloutSimulator struct {
	cs    kubernetes.Interface
	delay time.Duration

	mu         sync.Mutex
	running    map[string]bool
	maxRunning int
	lastDone   time.Time
	scheduled  map[string]int64
}

func startSimulator(ctx context.Context, cs kubernetes.Interface, ns string, delay time.Duration) (*rolloutSimulator, error) {
	s := &rolloutSimulator{cs: cs, delay: delay, running: map[string]bool{}, scheduled: map[string]int64{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Apps().V1().Deployments().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.see(ctx, obj.(*appsv1.Deployment)) },
		UpdateFunc: func(_, obj any) { s.see(ctx, obj.(*appsv1.Deployment)) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the simulator's %v informer did not sync", typ)
		}
	}
	return s, nil
}

func (s *rolloutSimulator) see(ctx context.Context, d *appsv1.Deployment) {
	key := d.Namespace + "/" + d.Name
	behind := d.Status.ObservedGeneration < d.Generation
	_, stamped := d.Annotations[plan.RolledAtAnnotation]
	s.mu.Lock()
	defer s.mu.Unlock()
	if stamped && behind {
		s.running[key] = true
	} else if s.running[key] {
		delete(s.running, key)
		s.lastDone = time.Now()
	}
	s.maxRunning = max(s.maxRunning, len(s.running))
	if behind && s.scheduled[key] < d.Generation {
		s.scheduled[key] = d.Generation
		gen, name, ns := d.Generation, d.Name, d.Namespace
		time.AfterFunc(s.delay, func() { s.complete(ctx, ns, name, gen) })
	}
}

// complete writes a status that reports generation gen rolled out,
// re-reading on a conflict with Reroll's writes.
func (s *rolloutSimulator) complete(ctx context.Context, ns, name string, gen int64) {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		d, err := s.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || d.Status.ObservedGeneration >= gen {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
		_, err = s.cs.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		logf("simulator: writing the status of %s/%s: %v", ns, name, err)
	}
}

func (s *rolloutSimulator) snapshot() (maxRunning, running int, lastDone time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRunning, len(s.running), s.lastDone
}

// safety runs the safety profile: Reroll records every Deployment, then
// the shared Secret changes once and Reroll rolls them at most bound at a
// time.
func safety(ctx context.Context, res *result, p profile, tr *tracker, ch *changer, cs kubernetes.Interface, rerollBin, kubeconfig, dir string, bound int, rollout time.Duration) error {
	sim, err := startSimulator(ctx, cs, sharedNamespace, rollout)
	if err != nil {
		return err
	}
	// One namespace: its share of the bound is the whole bound.
	flags := []string{"--max-concurrent-rollouts=" + strconv.Itoa(bound), "--max-concurrent-rollouts-per-namespace=" + strconv.Itoa(bound)}
	cold, b, err := startRun(ctx, tr, ch, rerollBin, kubeconfig, filepath.Join(dir, "reroll-safety.log"), p, flags, nil)
	if err != nil {
		return err
	}
	defer b.reroll.stop()
	res.Cold = *cold
	ws := p.sharedWorkloads()
	before := map[string]int{}
	for _, w := range ws {
		before[w.key()] = tr.rolloutCount(w.key())
	}
	logf("safety: one Secret read by %d Deployments changes; --max-concurrent-rollouts=%d, rollouts take %s", len(ws), bound, rollout)
	start, err := ch.secret(ctx, sharedNamespace, sharedSecret)
	if err != nil {
		return err
	}
	for i, w := range ws {
		if _, err := tr.waitRollout(ctx, w.key(), before[w.key()], 30*time.Minute); err != nil {
			return err
		}
		if (i+1)%100 == 0 {
			logf("safety: %d of %d rolled", i+1, len(ws))
		}
	}
	for {
		_, running, _ := sim.snapshot()
		if running == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}
	most, _, last := sim.snapshot()
	r := &safetyResult{Workloads: len(ws), Bound: bound, RolloutSeconds: rollout.Seconds(), MaxRunning: most,
		AllDoneSeconds: last.Sub(start).Seconds(), RolloutsMin: int(^uint(0) >> 1)}
	for _, w := range ws {
		n := tr.rolloutCount(w.key()) - before[w.key()]
		r.RolloutsMin, r.RolloutsMax = min(r.RolloutsMin, n), max(r.RolloutsMax, n)
	}
	res.Safety = r
	return nil
}

// evaluateSafety fills Failures of the safety profile: the bound held and
// each workload rolled once.
func evaluateSafety(res *result) {
	s := res.Safety
	res.Targets = append(res.Targets, target{Name: "most rollouts running at once", Value: float64(s.MaxRunning), Limit: float64(s.Bound), Unit: "", Met: s.MaxRunning <= s.Bound})
	if s.MaxRunning > s.Bound {
		res.Failures = append(res.Failures, fmt.Sprintf("safety: %d rollouts ran at once, want at most %d", s.MaxRunning, s.Bound))
	}
	if s.RolloutsMin != 1 || s.RolloutsMax != 1 {
		res.Failures = append(res.Failures, fmt.Sprintf("safety: rollouts per workload between %d and %d, want exactly 1", s.RolloutsMin, s.RolloutsMax))
	}
}
