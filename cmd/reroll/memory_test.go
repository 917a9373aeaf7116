package main

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/idlegc"
)

// runnables records what paceCollector adds to a manager.
type runnables []manager.Runnable

func (r *runnables) Add(x manager.Runnable) error {
	*r = append(*r, x)
	return nil
}

func TestPaceCollector_RunsTheIdlePacerUnlessGOGCIsSet(t *testing.T) {
	for name, tc := range map[string]struct {
		// gogc is the environment's GOGC ("" unset).
		gogc string
		// want is what the manager runs.
		want []manager.Runnable
	}{
		"GOGC unset: Go's default while busy, 25 while idle": {gogc: "", want: []manager.Runnable{idlegc.Default()}},
		"GOGC set: the operator's target holds throughout":   {gogc: "50", want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			var got runnables
			g := gomega.NewWithT(t)
			g.Expect(paceCollector(&got)).To(gomega.Succeed())
			g.Expect([]manager.Runnable(got)).To(gomega.Equal(tc.want))
		})
	}
}

func TestSetMemProfileRate_SamplesOnlyWhenPprofIsServed(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	for name, tc := range map[string]struct {
		// pprof is --enable-pprof.
		pprof bool
		// want is runtime.MemProfileRate afterwards, from Go's default.
		want int
	}{
		"with --enable-pprof, Go's default sampling for heap profiles": {pprof: true, want: 512 * 1024},
		"without it, no sampling (nothing reads the samples)":          {pprof: false, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			runtime.MemProfileRate = 512 * 1024
			setMemProfileRate(tc.pprof)
			gomega.NewWithT(t).Expect(runtime.MemProfileRate).To(gomega.Equal(tc.want))
		})
	}
}

// forcedCollections is the runtime's count of collections forced by the
// program (runtime.GC, debug.FreeOSMemory).
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestFreeAfter_ReturnsTheHeapOnceWhenTheFirstPassEnds(t *testing.T) {
	g := gomega.NewWithT(t)
	pass := make(chan struct{})
	before := forcedCollections()
	returned := make(chan struct{})
	go func() {
		freeAfter(t.Context(), true, pass)
		close(returned)
	}()
	g.Consistently(forcedCollections, 200*time.Millisecond).Should(gomega.Equal(before), "synced: the first pass reuses the sync's free pages first")
	g.Expect(returned).NotTo(gomega.BeClosed(), "it waits for the first pass")
	close(pass)
	g.Eventually(returned).Should(gomega.BeClosed())
	g.Expect(forcedCollections()).To(gomega.Equal(before+1), "the garbage of the sync and of the first pass is returned once")
}

func TestFreeAfter_NothingWhenNotSyncedAndOnceAtSyncWithoutAPass(t *testing.T) {
	g := gomega.NewWithT(t)
	before := forcedCollections()
	freeAfter(t.Context(), false, make(chan struct{}))
	g.Expect(forcedCollections()).To(gomega.Equal(before), "not synced: the manager is stopping")

	ctx, cancel := context.WithCancel(t.Context())
	returned := make(chan struct{})
	go func() {
		freeAfter(ctx, true, nil)
		close(returned)
	}()
	g.Eventually(forcedCollections).Should(gomega.Equal(before+1), "no pass: returned at sync")
	g.Consistently(returned, 100*time.Millisecond).ShouldNot(gomega.BeClosed(), "no pass: it waits for the end")
	cancel()
	g.Eventually(returned).Should(gomega.BeClosed())
	g.Expect(forcedCollections()).To(gomega.Equal(before + 1))
}

func TestBlocksUntilSynced_OnUntilTheCacheHasSyncedOnEveryReplica(t *testing.T) {
	g := gomega.NewWithT(t)
	var blocks compact.Blocks
	var got runnables
	release := make(chan struct{})
	synced := func(ctx context.Context) bool {
		select {
		case <-release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	g.Expect(blocksUntilSynced(&got, &blocks, synced)).To(gomega.Succeed())
	g.Expect(blocks.On()).To(gomega.BeTrue(), "on before the manager starts the cache")
	g.Expect(got).To(gomega.HaveLen(1))
	end, ok := got[0].(manager.LeaderElectionRunnable)
	g.Expect(ok && !end.NeedLeaderElection()).To(gomega.BeTrue(), "runs on a standby too")

	returned := make(chan error, 1)
	go func() { returned <- got[0].Start(t.Context()) }()
	g.Consistently(blocks.On, 100*time.Millisecond).Should(gomega.BeTrue(), "on while the cache fills")
	close(release)
	g.Eventually(returned).Should(gomega.Receive(gomega.BeNil()))
	g.Expect(blocks.On()).To(gomega.BeFalse(), "off once synced")

	// Off too when the manager stops before the cache has synced.
	g.Expect(blocksUntilSynced(&got, &blocks, func(ctx context.Context) bool { <-ctx.Done(); return false })).To(gomega.Succeed())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g.Expect(got[1].Start(ctx)).To(gomega.Succeed())
	g.Expect(blocks.On()).To(gomega.BeFalse())
}
