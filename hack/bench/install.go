package main

import (
	"context"
	"fmt"
	"time"
)

// installResult is the install scenario (issue 21): ConfigMaps and Secrets
// changed while a fresh Reroll records every workload on first sight (one
// PATCH each, at its --kube-api-qps); the workloads that read them must each
// roll exactly once, whether the change came before or after their first
// sight, and no other workload may roll.
type installResult struct {
	// Changes were made over SpreadSeconds from Reroll's /readyz, one per
	// workload, ConfigMaps and Secrets in turn.
	Changes       int     `json:"changes"`
	SpreadSeconds float64 `json:"spreadSeconds"`
	// BeforeFirstSight is how many changes were answered before Reroll
	// had looked at every workload (it writes no record on first sight, so
	// the bench cannot tell each workload's moment): the first-sight rule
	// rolled some of those, the in-memory baseline the rest.
	BeforeFirstSight int `json:"beforeFirstSight"`
	// RolloutsMin and RolloutsMax are the fewest and most rollouts of a
	// changed workload (1 each is right); OtherRollouts those of every
	// other workload (0 is right: installing rolls nothing).
	RolloutsMin   int `json:"rolloutsMin"`
	RolloutsMax   int `json:"rolloutsMax"`
	OtherRollouts int `json:"otherRollouts"`
	// DeploymentPatches are Reroll's successful PATCHes of Deployments
	// from its start until quiet: one per changed workload is right (its
	// rollout); first sight writes none (issue #36).
	DeploymentPatches float64 `json:"deploymentPatches"`
	// ConfigMapWrites are its creates and updates of ConfigMaps in the
	// same time: its own state (the installation ConfigMap, baselines),
	// at most one per namespace.
	ConfigMapWrites float64 `json:"configMapWrites"`
}

// installChanges changes the objects of ws while Reroll starts.
type installChanges struct {
	ws     []workload
	spread time.Duration
	done   chan error
	// changed is when each change was answered, by workload key.
	changed map[string]time.Time
}

// installSpread is how long the install scenario spreads its changes: over
// the first sight of deployments at Reroll's default 50 requests per
// second, at most 60 s, at least 1 s.
func installSpread(deployments int) time.Duration {
	return min(60*time.Second, max(time.Second, time.Duration(deployments)*time.Second/50))
}

// startInstallChanges starts changing the objects of ws, evenly over
// spread, on a goroutine of its own (ch is not shared meanwhile).
func startInstallChanges(ctx context.Context, ch *changer, ws []workload, spread time.Duration) *installChanges {
	ic := &installChanges{ws: ws, spread: spread, done: make(chan error, 1), changed: map[string]time.Time{}}
	go func() {
		step := spread / time.Duration(len(ws))
		for i, w := range ws {
			var at time.Time
			var err error
			if i%2 == 0 {
				at, err = ch.configMap(ctx, w.Namespace, w.ConfigMap)
			} else {
				at, err = ch.secret(ctx, w.Namespace, w.Secret)
			}
			if err != nil {
				ic.done <- fmt.Errorf("install scenario: changing the objects of %s: %w", w.key(), err)
				return
			}
			ic.changed[w.key()] = at
			select {
			case <-ctx.Done():
				ic.done <- ctx.Err()
				return
			case <-time.After(step):
			}
		}
		ic.done <- nil
	}()
	return ic
}

// finish waits for the changes, for the rollout of each changed workload
// and for quiet, and counts; lookedAt is when Reroll had looked at every
// workload.
func (ic *installChanges) finish(ctx context.Context, b *bench, lookedAt time.Time) (*installResult, error) {
	if err := <-ic.done; err != nil {
		return nil, err
	}
	for _, w := range ic.ws {
		if _, err := b.tr.waitRollout(ctx, w.key(), 0, 2*time.Minute+b.window); err != nil {
			return nil, fmt.Errorf("install scenario: %w", err)
		}
	}
	if err := b.quiet(ctx); err != nil {
		return nil, err
	}
	res := &installResult{Changes: len(ic.ws), SpreadSeconds: ic.spread.Seconds(), RolloutsMin: len(ic.ws) + 1}
	changed := map[string]bool{}
	for _, w := range ic.ws {
		n := b.tr.rolloutCount(w.key())
		res.RolloutsMin, res.RolloutsMax = min(res.RolloutsMin, n), max(res.RolloutsMax, n)
		changed[w.key()] = true
		if ic.changed[w.key()].Before(lookedAt) {
			res.BeforeFirstSight++
		}
	}
	res.OtherRollouts = b.tr.rolloutsExcept(changed)
	return res, nil
}

// installWorkloads are the workloads whose objects the install scenario
// changes: n of ws, spread over the list.
func installWorkloads(ws []workload, n int) []workload {
	if len(ws) == 0 {
		return nil
	}
	n = min(n, len(ws))
	out := make([]workload, 0, n)
	for i := range n {
		out = append(out, ws[(i*len(ws))/n])
	}
	return out
}

// checkInstall adds the install scenario's failures: each changed workload
// rolled exactly once, no other one rolled.
func checkInstall(res *result) {
	i := res.Cold.Install
	if i == nil {
		return
	}
	if i.RolloutsMin != 1 || i.RolloutsMax != 1 {
		res.Failures = append(res.Failures, fmt.Sprintf("install: rollouts per changed workload between %d and %d, want exactly 1", i.RolloutsMin, i.RolloutsMax))
	}
	if i.OtherRollouts != 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("install: %d rollouts of workloads whose objects did not change, want none", i.OtherRollouts))
	}
	if i.DeploymentPatches != float64(i.Changes) {
		res.Failures = append(res.Failures, fmt.Sprintf("install: %v Deployment PATCHes from the start until quiet for %d changed workloads, want one each (first sight writes no workload)", i.DeploymentPatches, i.Changes))
	}
	if limit := float64(res.Profile.Namespaces + 2); i.ConfigMapWrites > limit {
		res.Failures = append(res.Failures, fmt.Sprintf("install: %v writes of ConfigMaps from the start until quiet, want at most one per namespace and the installation ConfigMap (%v)", i.ConfigMapWrites, limit))
	}
}

// succeeded is the number of requests with verb and resource that the API
// server accepted (2xx).
func (a apiRequests) succeeded(verb, resource string) float64 {
	return a[verb+" "+resource]
}
