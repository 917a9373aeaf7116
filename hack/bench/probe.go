package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/store"
)

// Cache designs compared by the probe, in a process of their own each.
const (
	// designDigest is Reroll's: full watches of ConfigMaps and Secrets
	// whose values the transform replaces with digests while streaming.
	designDigest = "digest"
	// designMetadata watches only the metadata of ConfigMaps and Secrets;
	// a controller on it must GET each referenced object to see its data.
	designMetadata = "metadata"
)

// probeResult is what filling one design's cache cost.
type probeResult struct {
	Design      string  `json:"design"`
	SyncSeconds float64 `json:"syncSeconds"`
	// HeapAfterGC is the live heap once synced, after a forced GC.
	HeapAfterGC float64 `json:"heapAfterGCBytes"`
	RSS         float64 `json:"rssBytes"`
	PeakRSS     float64 `json:"peakRSSBytes"`
	// Requests made to fill the cache.
	Requests apiRequests `json:"requests"`
}

// probe fills the cache of one design with the informers Reroll uses and
// prints a probeResult as JSON. It runs in a child process of the bench.
func probe(design, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 300
	counter := metrics.NewRequestCounter()
	cfg.Wrap(counter.Wrap)
	opts := scope.Scope{}.CacheOptions()
	c, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs := []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}}
	// Design (a) keeps ConfigMaps and Secrets in Reroll's store (a
	// digest.Object per object), as the controller does; design (b) leaves
	// the store empty.
	var stored []reference.Kind
	switch design {
	case designDigest:
		stored = []reference.Kind{reference.ConfigMap, reference.Secret}
	case designMetadata:
		for _, kind := range []string{"ConfigMap", "Secret"} {
			objs = append(objs, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}})
		}
	default:
		return fmt.Errorf("unknown design %q", design)
	}
	st, err := store.New(cfg, store.Options{Kinds: stored})
	if err != nil {
		return err
	}
	begin := time.Now()
	for _, o := range objs {
		if _, err := c.GetInformer(ctx, o); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	go func() { _ = st.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) || st.WaitForSync(ctx) != nil {
		return fmt.Errorf("cache of design %s did not sync", design)
	}
	res := probeResult{Design: design, SyncSeconds: time.Since(begin).Seconds()}
	runtime.GC()
	if path := os.Getenv("BENCH_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		f.Close()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapAfterGC = float64(ms.HeapAlloc)
	pid := os.Getpid()
	res.RSS, _ = procStatus(pid, "VmRSS")
	res.PeakRSS, _ = procStatus(pid, "VmHWM")
	res.Requests = apiRequests{}
	for r, n := range counter.Counts() {
		resource := r.Resource
		if resource == "" {
			resource = "(discovery)"
		}
		res.Requests[r.Verb+" "+resource] += float64(n)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// runProbe runs probe for design in a new process of this binary.
func runProbe(ctx context.Context, design, kubeconfig string) (probeResult, error) {
	self, err := os.Executable()
	if err != nil {
		return probeResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-probe="+design, "-kubeconfig="+kubeconfig)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return probeResult{}, fmt.Errorf("probe of design %s: %w", design, err)
	}
	var res probeResult
	if err := json.Unmarshal(out, &res); err != nil {
		return probeResult{}, fmt.Errorf("probe of design %s printed %q: %w", design, out, err)
	}
	return res, nil
}
