package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// fairnessResult is what the fairness profile measured (issue #32): how
// long one namespace's single rollout waits while another namespace's
// 1,000 workloads, all reading one ConfigMap that just changed, are being
// rolled.
type fairnessResult struct {
	// Flood is the number of workloads of the busy namespace.
	Flood int `json:"flood"`
	// Alone is the latency, change to patched template, of single changes
	// in the quiet namespace with nothing else to do.
	Alone latency `json:"alone"`
	// DuringFlood is the same latency when each change was made
	// FloodLeadMillis after the busy namespace's ConfigMap changed.
	DuringFlood     latency `json:"duringFlood"`
	FloodLeadMillis float64 `json:"floodLeadMillis"`
	// FloodSeconds are, for each flood, the time from its change until all
	// of its workloads were rolled; RolledBefore how many of them had been
	// rolled when the quiet namespace's workload was.
	FloodSeconds []float64 `json:"floodSeconds"`
	RolledBefore []int     `json:"rolledBefore"`
	// RolloutsMin and RolloutsMax are over every flooded and quiet
	// workload of every round: 1 each is right.
	RolloutsMin int `json:"rolloutsMin"`
	RolloutsMax int `json:"rolloutsMax"`
}

// fairnessRounds is how many floods the fairness profile times.
const fairnessRounds = 3

// fairnessLead is how long after the flood's change the quiet namespace's
// change is made: the busy namespace's reconciles are queued by then.
const fairnessLead = 200 * time.Millisecond

// fairness runs the fairness profile: Reroll with its default flags over
// the profile's namespace of workloads (bench-00, the quiet tenant) and
// bench-shared's SharedDeployments (the busy tenant, all reading one
// ConfigMap). It times single changes in bench-00 alone, then the same
// during each of fairnessRounds floods: bench-shared's ConfigMap changes
// and, fairnessLead later, one bench-00 workload's ConfigMap.
func fairness(ctx context.Context, res *result, p profile, tr *tracker, ch *changer, rerollBin, kubeconfig, dir string) error {
	cold, b, err := startRun(ctx, tr, ch, rerollBin, kubeconfig, filepath.Join(dir, "reroll-fairness.log"), p, nil, nil)
	if err != nil {
		return err
	}
	defer b.reroll.stop()
	res.Cold = *cold
	quiet := p.workloads()
	if len(quiet) < 5+fairnessRounds {
		return fmt.Errorf("the fairness profile needs at least %d workloads outside bench-shared", 5+fairnessRounds)
	}
	f := &fairnessResult{Flood: p.SharedDeployments, FloodLeadMillis: float64(fairnessLead.Milliseconds()), RolloutsMin: 1 << 30}
	logf("fairness: 5 single changes with nothing else to do")
	if f.Alone, err = b.sequential(ctx, quiet[:5], 5); err != nil {
		return err
	}
	flood := p.sharedWorkloads()
	var during []time.Duration
	for round := range fairnessRounds {
		w := quiet[5+round]
		logf("fairness: round %d: %d workloads of %s roll while %s changes", round+1, len(flood), sharedNamespace, w.key())
		before := map[string]int{w.key(): tr.rolloutCount(w.key())}
		for _, s := range flood {
			before[s.key()] = tr.rolloutCount(s.key())
		}
		start, err := ch.configMap(ctx, sharedNamespace, sharedConfigMap)
		if err != nil {
			return err
		}
		time.Sleep(fairnessLead)
		t0, err := ch.configMap(ctx, w.Namespace, w.ConfigMap)
		if err != nil {
			return err
		}
		t1, err := tr.waitRollout(ctx, w.key(), before[w.key()], 2*time.Minute)
		if err != nil {
			return err
		}
		during = append(during, max(t1.Sub(t0), 0))
		var last time.Time
		rolledBefore := 0
		for _, s := range flood {
			t, err := tr.waitRollout(ctx, s.key(), before[s.key()], 5*time.Minute)
			if err != nil {
				return err
			}
			last = maxTime(last, t)
			if t.Before(t1) {
				rolledBefore++
			}
		}
		f.FloodSeconds = append(f.FloodSeconds, last.Sub(start).Seconds())
		f.RolledBefore = append(f.RolledBefore, rolledBefore)
		if err := b.quiet(ctx); err != nil {
			return err
		}
		for _, s := range append(flood, w) {
			n := tr.rolloutCount(s.key()) - before[s.key()]
			f.RolloutsMin, f.RolloutsMax = min(f.RolloutsMin, n), max(f.RolloutsMax, n)
		}
		logf("fairness: round %d: %s rolled %.2f s after its change, %d of %d rolled before it; all %d rolled %.1f s after theirs",
			round+1, w.key(), during[round].Seconds(), rolledBefore, len(flood), len(flood), f.FloodSeconds[round])
	}
	f.DuringFlood = latencyOf(during)
	_, _ = b.reroll.memoryNow()
	res.Cold.PeakRSS, _ = b.reroll.peakRSS()
	res.Fairness = f
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// evaluateFairness fills the fairness profile's failures: every workload
// rolled exactly once per round. How long the quiet namespace waited is
// printed, never checked (a timing).
func evaluateFairness(res *result) {
	f := res.Fairness
	if f.RolloutsMin != 1 || f.RolloutsMax != 1 {
		res.Failures = append(res.Failures, fmt.Sprintf("fairness: rollouts per workload and round between %d and %d, want exactly 1", f.RolloutsMin, f.RolloutsMax))
	}
}
