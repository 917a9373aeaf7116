package main

import (
	"runtime"
	"testing"

	"github.com/onsi/gomega"
)

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
