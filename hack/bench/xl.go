package main

import (
	"context"
	"path/filepath"
)

// xl runs the xl profile: a cold start of Reroll over 100,000 Secrets and
// 10,000 Deployments (start-up, first sight, memory after sync) during
// which the install scenario changes 20 ConfigMaps and Secrets, then 20
// single changes, one at a time, for the latency of one change at this size.
func xl(ctx context.Context, res *result, p profile, tr *tracker, ch *changer, rerollBin, kubeconfig, dir string) error {
	cold, b, err := startRun(ctx, tr, ch, rerollBin, kubeconfig, filepath.Join(dir, "reroll-xl.log"), p, nil, installWorkloads(p.workloads(), 20))
	if err != nil {
		return err
	}
	defer b.reroll.stop()
	logf("xl: 20 sequential changes")
	ws := p.workloads()
	if cold.Sequential, err = b.sequential(ctx, ws[:20], 20); err != nil {
		return err
	}
	_, _ = b.reroll.memoryNow()
	cold.PeakRSS, _ = b.reroll.peakRSS()
	cold.HeapPeak = b.reroll.heapPeak
	res.Cold = *cold
	return nil
}

// evaluateXL fills the xl profile's targets (issue 15): start-up within
// 30 s and RSS after sync within 160 MiB.
func evaluateXL(res *result) {
	c := res.Cold
	add := func(name string, v, limit float64, unit string) {
		res.Targets = append(res.Targets, target{Name: name, Value: v, Limit: limit, Unit: unit, Met: v <= limit})
	}
	add("start-up to synced (cold)", c.StartupSeconds, 30, "s")
	add("RSS after sync", c.AfterSync.RSS/mib, 160, "MiB")
	checkInstall(res)
}
