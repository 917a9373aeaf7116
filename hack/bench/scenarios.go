package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// changer makes the changes of the scenarios; every change writes a value
// never written before.
type changer struct {
	cs         kubernetes.Interface
	secretSize int
	seq        int
}

func (c *changer) next() int { c.seq++; return c.seq }

// configMap changes configKey of a ConfigMap and returns when the API
// server answered.
func (c *changer) configMap(ctx context.Context, ns, name string) (time.Time, error) {
	body, _ := json.Marshal(map[string]any{"data": map[string]string{configKey: fmt.Sprintf("v%d", c.next())}})
	_, err := c.cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return time.Now(), err
}

// secret replaces the value of a Secret's key with another of the same size.
func (c *changer) secret(ctx context.Context, ns, name string) (time.Time, error) {
	v := make([]byte, c.secretSize)
	copy(v, fmt.Sprintf("v%d-", c.next()))
	body, _ := json.Marshal(map[string]any{"data": map[string]string{secretKey: base64.StdEncoding.EncodeToString(v)}})
	_, err := c.cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return time.Now(), err
}

// label changes only a label of a ConfigMap ("configmaps") or Secret.
func (c *changer) label(ctx context.Context, resource, ns, name string) error {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"bench-touch": fmt.Sprintf("t%d", c.next())}}})
	var err error
	if resource == "configmaps" {
		_, err = c.cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		_, err = c.cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	return err
}

// latency is a distribution of durations, in milliseconds.
type latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P95 float64 `json:"p95Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

func latencyOf(d []time.Duration) latency {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(d)))) - 1
		return float64(d[max(i, 0)].Microseconds()) / 1000
	}
	return latency{N: len(d), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: rank(1)}
}

// bench is one run's shared state.
type bench struct {
	tr     *tracker
	ch     *changer
	reroll *rerollProcess
	window time.Duration
	// count, when set, counts the controller's requests instead of
	// Reroll's metrics (side-by-side runs count both controllers through
	// one proxy).
	count func() (apiRequests, error)
}

// requests returns the controller's requests so far.
func (b *bench) requests() (apiRequests, error) {
	if b.count != nil {
		return b.count()
	}
	return b.reroll.requests()
}

// sequential changes the ConfigMaps of n workloads one after another and
// measures, for each, the time from the API server's answer to the watch
// event that shows the patched pod template.
func (b *bench) sequential(ctx context.Context, ws []workload, n int) (latency, error) {
	var d []time.Duration
	for i := range n {
		w := ws[i%len(ws)]
		before := b.tr.rolloutCount(w.key())
		t0, err := b.ch.configMap(ctx, w.Namespace, w.ConfigMap)
		if err != nil {
			return latency{}, err
		}
		t1, err := b.tr.waitRollout(ctx, w.key(), before, 30*time.Second+b.window)
		if err != nil {
			return latency{}, err
		}
		d = append(d, max(t1.Sub(t0), 0))
	}
	return latencyOf(d), nil
}

// rolloutsResult is what a scenario did to the workloads it affected.
type rolloutsResult struct {
	Changes   int `json:"changes"`
	Workloads int `json:"workloads"`
	// SendSeconds is how long sending the changes took.
	SendSeconds float64 `json:"sendSeconds"`
	// AllPatchedSeconds is from the first change's answer to the watch
	// event of the last workload's patched template.
	AllPatchedSeconds float64 `json:"allPatchedSeconds"`
	// RolloutsMin and RolloutsMax are the fewest and most template changes
	// a workload got; exactly 1 each is the goal.
	RolloutsMin int `json:"rolloutsMin"`
	RolloutsMax int `json:"rolloutsMax"`
	// LastRolloutSeconds is from the first change's answer to the last
	// rollout of any of the workloads, once quiet: the end of the burst's
	// rollouts for a controller that rolls a workload more than once.
	LastRolloutSeconds float64 `json:"lastRolloutSeconds"`
	// Requests are Reroll's API requests during the scenario.
	Requests apiRequests `json:"requests"`
}

// affect runs send, which makes changes to the objects of ws, waits until
// each of ws was rolled and things are quiet, and counts rollouts and
// requests.
func (b *bench) affect(ctx context.Context, ws []workload, send func() (int, error)) (rolloutsResult, error) {
	before := map[string]int{}
	for _, w := range ws {
		before[w.key()] = b.tr.rolloutCount(w.key())
	}
	reqBefore, err := b.requests()
	if err != nil {
		return rolloutsResult{}, err
	}
	start := time.Now()
	changes, err := send()
	if err != nil {
		return rolloutsResult{}, err
	}
	sent := time.Now()
	var last time.Time
	for _, w := range ws {
		t, err := b.tr.waitRollout(ctx, w.key(), before[w.key()], 60*time.Second+b.window)
		if err != nil {
			return rolloutsResult{}, err
		}
		if t.After(last) {
			last = t
		}
	}
	if err := b.quiet(ctx); err != nil {
		return rolloutsResult{}, err
	}
	reqAfter, err := b.requests()
	if err != nil {
		return rolloutsResult{}, err
	}
	res := rolloutsResult{
		Changes: changes, Workloads: len(ws),
		SendSeconds:       sent.Sub(start).Seconds(),
		AllPatchedSeconds: last.Sub(start).Seconds(),
		RolloutsMin:       math.MaxInt,
		Requests:          reqAfter.minus(reqBefore),
	}
	for _, w := range ws {
		n := b.tr.rolloutCount(w.key()) - before[w.key()]
		res.RolloutsMin, res.RolloutsMax = min(res.RolloutsMin, n), max(res.RolloutsMax, n)
		if t, ok := b.tr.lastRollout(w.key()); ok && t.After(last) {
			last = t
		}
	}
	res.LastRolloutSeconds = last.Sub(start).Seconds()
	return res, nil
}

// storm makes 2 changes (ConfigMap, then Secret) to each of ws, paced so
// that all of them take about a second.
func (b *bench) storm(ctx context.Context, ws []workload) (rolloutsResult, error) {
	return b.affect(ctx, ws, func() (int, error) {
		tick := time.NewTicker(time.Second / time.Duration(2*len(ws)))
		defer tick.Stop()
		for _, w := range ws {
			<-tick.C
			if _, err := b.ch.configMap(ctx, w.Namespace, w.ConfigMap); err != nil {
				return 0, err
			}
			<-tick.C
			if _, err := b.ch.secret(ctx, w.Namespace, w.Secret); err != nil {
				return 0, err
			}
		}
		return 2 * len(ws), nil
	})
}

// together changes each workload's ConfigMap and Secret back to back.
func (b *bench) together(ctx context.Context, ws []workload) (rolloutsResult, error) {
	return b.affect(ctx, ws, func() (int, error) {
		for _, w := range ws {
			if _, err := b.ch.configMap(ctx, w.Namespace, w.ConfigMap); err != nil {
				return 0, err
			}
			if _, err := b.ch.secret(ctx, w.Namespace, w.Secret); err != nil {
				return 0, err
			}
		}
		return 2 * len(ws), nil
	})
}

// shared changes the one ConfigMap that all of ws read.
func (b *bench) shared(ctx context.Context, ws []workload) (rolloutsResult, error) {
	return b.affect(ctx, ws, func() (int, error) {
		_, err := b.ch.configMap(ctx, sharedNamespace, sharedConfigMap)
		return 1, err
	})
}

// labelOnlyResult is what n label-only changes cost.
type labelOnlyResult struct {
	Changes  int         `json:"changes"`
	Rollouts int         `json:"rollouts"`
	Requests apiRequests `json:"requests"`
}

// labelOnly relabels the ConfigMap and Secret of workloads, n changes in
// all, and counts Reroll's requests and rollouts until things are quiet.
func (b *bench) labelOnly(ctx context.Context, ws []workload, n int) (labelOnlyResult, error) {
	total := func() int {
		t := 0
		for _, w := range ws {
			t += b.tr.rolloutCount(w.key())
		}
		return t
	}
	rolloutsBefore := total()
	reqBefore, err := b.requests()
	if err != nil {
		return labelOnlyResult{}, err
	}
	for i := range n {
		w := ws[(i/2)%len(ws)]
		resource, name := "configmaps", w.ConfigMap
		if i%2 == 1 {
			resource, name = "secrets", w.Secret
		}
		if err := b.ch.label(ctx, resource, w.Namespace, name); err != nil {
			return labelOnlyResult{}, err
		}
	}
	// Give a mistaken rollout every chance to show: the window, then until
	// Reroll makes no request for a while.
	if err := b.quiet(ctx); err != nil {
		return labelOnlyResult{}, err
	}
	reqAfter, err := b.requests()
	if err != nil {
		return labelOnlyResult{}, err
	}
	return labelOnlyResult{Changes: n, Rollouts: total() - rolloutsBefore, Requests: reqAfter.minus(reqBefore)}, nil
}

// quiet waits for the coalesce window, then until Reroll's request count
// has not moved for a second (at most 60 s).
func (b *bench) quiet(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.window + 200*time.Millisecond):
	}
	var last float64 = -1
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r, err := b.requests()
		if err != nil {
			return err
		}
		if r.total() == last {
			return nil
		}
		last = r.total()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return nil
}
