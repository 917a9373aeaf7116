package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// settledResult is what the settled profile measured (issue #36): on a
// cluster whose Deployment controller has settled every Deployment (a
// ReplicaSet each, every generation observed), ConfigMaps changed
// ChangeAfterStartSeconds after Reroll's first start get their new
// ReplicaSets; then, once Reroll is quiet, as many other ConfigMaps
// change, for the same figure at any other time.
type settledResult struct {
	Deployments int `json:"deployments"`
	// SettleSeconds is how long the Deployment controller took to settle
	// the profile, from the first Deployment's create.
	SettleSeconds float64 `json:"settleSeconds"`
	// ChangeAfterStartSeconds is from Reroll's exec to the first change of
	// the install round (Reroll was ready ReadySeconds after its exec).
	ChangeAfterStartSeconds float64 `json:"changeAfterStartSeconds"`
	ReadySeconds            float64 `json:"readySeconds"`
	// Install and Later are, for each changed ConfigMap, the time from
	// the change's answer to the watch event of its Deployment's new
	// ReplicaSet: during Reroll's first start, and once it was quiet.
	Install latency `json:"install"`
	Later   latency `json:"later"`
	// InstallTemplate is the same to the patched pod template (Reroll's
	// own part).
	InstallTemplate latency `json:"installTemplate"`
	// DeploymentPatches are Reroll's successful Deployment PATCHes from its
	// start until quiet after the install round (one per changed workload
	// is right); GenerationsBumped the Deployments outside the changed ones
	// whose generation moved since they settled (0 is right: first sight
	// writes nothing).
	DeploymentPatches float64 `json:"deploymentPatches"`
	GenerationsBumped int     `json:"generationsBumped"`
	// RolloutsMin and RolloutsMax are over the changed workloads of both
	// rounds; OtherRollouts the rollouts of every other workload.
	RolloutsMin   int `json:"rolloutsMin"`
	RolloutsMax   int `json:"rolloutsMax"`
	OtherRollouts int `json:"otherRollouts"`
}

// settledChanges is how many ConfigMaps each round of the settled profile
// changes, and settledChangeAfter when the install round starts after
// Reroll's exec.
const (
	settledChanges     = 10
	settledChangeAfter = 5 * time.Second
)

// replicaSets records, per owning Deployment's UID, when each of its
// ReplicaSets was first seen on a watch.
type replicaSets struct {
	mu    sync.Mutex
	seen  map[types.UID][]time.Time
	names map[string]bool
}

func watchReplicaSets(ctx context.Context, cs kubernetes.Interface) (*replicaSets, error) {
	r := &replicaSets{seen: map[types.UID][]time.Time{}, names: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Apps().V1().ReplicaSets().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		rs := obj.(*appsv1.ReplicaSet)
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.names[rs.Namespace+"/"+rs.Name] {
			return
		}
		r.names[rs.Namespace+"/"+rs.Name] = true
		if o := metav1.GetControllerOf(rs); o != nil {
			r.seen[o.UID] = append(r.seen[o.UID], now)
		}
	}}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the bench's %v informer did not sync", typ)
		}
	}
	return r, nil
}

func (r *replicaSets) count(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[uid])
}

// wait waits for the (n+1)th ReplicaSet of uid and returns when it was seen.
func (r *replicaSets) wait(ctx context.Context, uid types.UID, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		s := r.seen[uid]
		r.mu.Unlock()
		if len(s) > n {
			return s[n], nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no new ReplicaSet of Deployment %s within %s", uid, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settled runs the settled profile on a full control plane (with
// kube-controller-manager at its default client limits): it waits until
// every Deployment has its ReplicaSet and its generation observed, starts
// Reroll with its default flags, changes the ConfigMaps of settledChanges
// workloads settledChangeAfter after the exec, and times each until its
// Deployment's new ReplicaSet; then, once quiet, the same with other
// workloads.
func settled(ctx context.Context, res *result, p profile, tr *tracker, ch *changer, cs kubernetes.Interface, rerollBin, kubeconfig, dir string, created time.Time) error {
	s := &settledResult{Deployments: p.totalDeployments()}
	rs, err := watchReplicaSets(ctx, cs)
	if err != nil {
		return err
	}
	logf("settled: waiting for the Deployment controller to settle %d Deployments", s.Deployments)
	generations := map[string]int64{}
	uids := map[string]types.UID{}
	for {
		ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		done := 0
		for _, d := range ds.Items {
			if d.Namespace == sharedNamespace {
				continue
			}
			if d.Status.ObservedGeneration >= d.Generation && rs.count(d.UID) > 0 {
				done++
			}
			generations[d.Namespace+"/"+d.Name] = d.Generation
			uids[d.Namespace+"/"+d.Name] = d.UID
		}
		if done == s.Deployments {
			break
		}
		if time.Since(created) > 20*time.Minute {
			return fmt.Errorf("settled: %d of %d Deployments settled after 20 min", done, s.Deployments)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	s.SettleSeconds = time.Since(created).Seconds()
	logf("settled: %d Deployments settled %.1f s after their creation began", s.Deployments, s.SettleSeconds)

	ws := p.workloads()
	install := installWorkloads(ws, settledChanges)
	// Offset by half a step: none of the install round's workloads.
	later := installWorkloads(ws[len(ws)/(2*settledChanges):], settledChanges)
	changed := map[string]bool{}
	for _, w := range append(append([]workload{}, install...), later...) {
		changed[w.key()] = true
	}
	round := func(group []workload) (rsLat, tmplLat latency, err error) {
		before := map[string]int{}
		rsBefore := map[string]int{}
		for _, w := range group {
			before[w.key()] = tr.rolloutCount(w.key())
			rsBefore[w.key()] = rs.count(uids[w.key()])
		}
		at := map[string]time.Time{}
		for _, w := range group {
			if at[w.key()], err = ch.configMap(ctx, w.Namespace, w.ConfigMap); err != nil {
				return rsLat, tmplLat, err
			}
		}
		var dRS, dT []time.Duration
		for _, w := range group {
			t, err := tr.waitRollout(ctx, w.key(), before[w.key()], 5*time.Minute)
			if err != nil {
				return rsLat, tmplLat, err
			}
			dT = append(dT, max(t.Sub(at[w.key()]), 0))
			t, err = rs.wait(ctx, uids[w.key()], rsBefore[w.key()], 10*time.Minute)
			if err != nil {
				return rsLat, tmplLat, fmt.Errorf("%s: %w", w.key(), err)
			}
			dRS = append(dRS, max(t.Sub(at[w.key()]), 0))
		}
		return latencyOf(dRS), latencyOf(dT), nil
	}

	logf("settled: starting Reroll; %d ConfigMaps change %s after its exec", settledChanges, settledChangeAfter)
	rp, err := startReroll(ctx, rerollBin, kubeconfig, filepath.Join(dir, "reroll-settled.log"), 5*time.Minute)
	if err != nil {
		return err
	}
	defer rp.stop()
	s.ReadySeconds = rp.Ready.Sub(rp.Started).Seconds()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(rp.Started.Add(settledChangeAfter))):
	}
	s.ChangeAfterStartSeconds = time.Since(rp.Started).Seconds()
	if s.Install, s.InstallTemplate, err = round(install); err != nil {
		return err
	}
	logf("settled: install round: new ReplicaSets after p50 %.0f ms, max %.0f ms (patched templates p50 %.0f ms)", s.Install.P50, s.Install.Max, s.InstallTemplate.P50)
	b := &bench{tr: tr, ch: ch, reroll: rp, window: 0}
	if err := b.quiet(ctx); err != nil {
		return err
	}
	reqs, err := rp.requests()
	if err != nil {
		return err
	}
	s.DeploymentPatches = reqs.succeeded("patch", "deployments")
	ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, d := range ds.Items {
		k := d.Namespace + "/" + d.Name
		if g, ok := generations[k]; ok && !changed[k] && d.Generation != g {
			s.GenerationsBumped++
		}
	}
	if s.Later, _, err = round(later); err != nil {
		return err
	}
	logf("settled: later round: new ReplicaSets after p50 %.0f ms, max %.0f ms", s.Later.P50, s.Later.Max)
	if err := b.quiet(ctx); err != nil {
		return err
	}
	s.RolloutsMin = 1 << 30
	for k := range changed {
		n := tr.rolloutCount(k)
		s.RolloutsMin, s.RolloutsMax = min(s.RolloutsMin, n), max(s.RolloutsMax, n)
	}
	s.OtherRollouts = tr.rolloutsExcept(changed)
	res.Cold.StartupSeconds = s.ReadySeconds
	if res.Cold.AfterSync, err = rp.memoryNow(); err != nil {
		return err
	}
	res.Cold.PeakRSS, _ = rp.peakRSS()
	res.Settled = s
	return nil
}

// evaluateSettled fills the settled profile's failures: each changed
// workload rolled once, no other one, and first sight wrote nothing.
func evaluateSettled(res *result) {
	s := res.Settled
	fail := func(format string, args ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, args...)) }
	if s.RolloutsMin != 1 || s.RolloutsMax != 1 {
		fail("settled: rollouts per changed workload between %d and %d, want exactly 1", s.RolloutsMin, s.RolloutsMax)
	}
	if s.OtherRollouts != 0 {
		fail("settled: %d rollouts of workloads whose ConfigMaps did not change, want none", s.OtherRollouts)
	}
	if s.DeploymentPatches != settledChanges {
		fail("settled: %v Deployment PATCHes from the start until quiet for %d changed workloads, want one each", s.DeploymentPatches, settledChanges)
	}
	if s.GenerationsBumped != 0 {
		fail("settled: %d Deployments that did not change had their generation bumped, want none", s.GenerationsBumped)
	}
}
