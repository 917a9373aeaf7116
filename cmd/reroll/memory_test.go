package main

import (
	"runtime"
	"testing"

	"github.com/onsi/gomega"
)

func TestSyncedGOGC_BoundsTheHeadroom(t *testing.T) {
	const mib = 1 << 20
	for name, tc := range map[string]struct {
		live uint64
		want int
	}{
		"unknown live heap keeps the start-up target": {live: 0, want: startupGOGC},
		"small heap (fanout profile)":                 {live: 14 * mib, want: 25},
		"32 MiB: 8 MiB is a quarter":                  {live: 32 * mib, want: 25},
		"40 MiB":                                      {live: 40 * mib, want: 20},
		"64 MiB":                                      {live: 64 * mib, want: 12},
		"large heap (xl profile) stops at the floor":  {live: 90 * mib, want: syncedGOGCMin},
		"1 GiB": {live: 1024 * mib, want: syncedGOGCMin},
	} {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(syncedGOGC(tc.live)).To(gomega.Equal(tc.want))
		})
	}
}

func TestLiveHeap_IsRead(t *testing.T) {
	// The runtime reports the metric once a collection has run.
	keep := make([]byte, 1<<20)
	runtime.GC()
	gomega.NewWithT(t).Expect(liveHeap()).To(gomega.BeNumerically(">=", len(keep)))
	runtime.KeepAlive(keep)
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
