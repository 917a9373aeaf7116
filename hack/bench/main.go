// Command bench measures Reroll at scale (`make bench`, `make test-e2e`).
//
// It starts a local etcd and kube-apiserver (no controller-manager: the
// Deployments have no replicas, and the bench measures Reroll's patches, not
// pod rollouts), creates a profile of namespaces, Secrets, ConfigMaps and
// Deployments, runs the built Reroll binary as a local process, and runs the
// scenarios of docs/benchmarks.md against it. It prints a table and, last,
// one line of JSON. With -check it exits 1 when a behaviour is wrong (a
// label-only change made a request, a workload was rolled other than exactly
// once per burst); timings and memory are printed against their targets but
// never fail the run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/reroll/reroll/internal/controller"
)

// result is everything a run measured; it is printed as one JSON line.
type result struct {
	Profile profile `json:"profile"`
	Machine machine `json:"machine"`
	// Commit is the VCS revision Reroll's binary was built from.
	Commit string `json:"commit"`
	// Load is /proc/loadavg when the run started: other work on the
	// machine.
	Load    string        `json:"loadAverage"`
	Started time.Time     `json:"started"`
	Objects int           `json:"objectsCreated"`
	CreateS float64       `json:"createSeconds"`
	Window  string        `json:"coalesceWindow"`
	Cold    run           `json:"cold"`
	Restart run           `json:"restartWindow0"`
	Designs []probeResult `json:"designs,omitempty"`
	Fanout  *fanoutResult `json:"fanout,omitempty"`
	Safety  *safetyResult `json:"safety,omitempty"`
	// Fairness is the fairness profile's result.
	Fairness *fairnessResult `json:"fairness,omitempty"`
	// Settled is the settled profile's result.
	Settled *settledResult `json:"settled,omitempty"`
	// SideBySide has one entry per controller of a run with -peer.
	SideBySide []sideRun `json:"sideBySide,omitempty"`
	Targets    []target  `json:"targets"`
	Failures   []string  `json:"failures"`
}

// run is one Reroll process and what it did.
type run struct {
	Flags []string `json:"flags"`
	// StartupSeconds is from exec to /readyz answering 200.
	StartupSeconds float64 `json:"startupSeconds"`
	// FirstSightSeconds is from ready to every Deployment looked at
	// (reroll_references counts each one's references).
	FirstSightSeconds float64 `json:"firstSightSeconds"`
	// StartRequests are the requests made until quiet after start.
	StartRequests apiRequests `json:"startRequests"`
	AfterSync     memory      `json:"afterSync"`
	PeakRSS       float64     `json:"peakRSSBytes"`
	// HeapPeak is the highest heap scraped (every 250 ms during start-up
	// and at each step): a lower bound of the true peak.
	HeapPeak   float64 `json:"heapPeakScrapedBytes"`
	Sequential latency `json:"sequential"`
	// Install is the install scenario (changes during first sight).
	Install   *installResult   `json:"install,omitempty"`
	LabelOnly *labelOnlyResult `json:"labelOnly,omitempty"`
	Storm     *rolloutsResult  `json:"storm,omitempty"`
	Shared    *rolloutsResult  `json:"shared,omitempty"`
	Together  *rolloutsResult  `json:"together,omitempty"`
}

type machine struct {
	CPUs       int    `json:"cpus"`
	CPU        string `json:"cpu"`
	MemoryMiB  int    `json:"memoryMiB"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	KubeServer string `json:"kubeServer"`
}

type target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Unit  string  `json:"unit"`
	Met   bool    `json:"met"`
}

func main() {
	// A flag set of its own: controller-runtime adds --kubeconfig to the
	// global one.
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	profileName := fs.String("profile", "small", "small, large, fanout, xl, safety, fairness or settled")
	bound := fs.Int("max-concurrent-rollouts", 20, "safety profile: Reroll's --max-concurrent-rollouts")
	rollout := fs.Duration("rollout", 3*time.Second, "safety profile: how long a simulated rollout takes")
	rerollBin := fs.String("reroll", ".run/bench/reroll", "the built Reroll binary")
	dir := fs.String("dir", ".run/bench", "folder for the control plane's state and the logs")
	window := fs.String("coalesce-window", "", "Reroll's --coalesce-window for the cold run; empty keeps Reroll's default")
	check := fs.Bool("check", false, "exit 1 when a behaviour is wrong (for make test-e2e)")
	designs := fs.Bool("designs", true, "also measure the cache of each design (digest, metadata-only)")
	secretBytes := fs.Int("secret-bytes", 0, "override the profile's Secret size, in bytes (to show memory does not depend on it)")
	workers := fs.Int("workers", 0, "fanout profile: Reroll's --max-concurrent-reconciles; 0 keeps Reroll's default")
	qps := fs.Float64("qps", 0, "fanout profile: Reroll's --kube-api-qps, and the baseline's; 0 keeps Reroll's default")
	hold := fs.Bool("hold", false, "create the profile, print its KUBECONFIG and wait for Ctrl-C instead of running Reroll (to investigate by hand)")
	peer := fs.String("peer", "", "another controller's binary to run side by side with Reroll, each on a fresh control plane with the same profile (see docs/benchmarks.md)")
	peerName := fs.String("peer-name", "", "the peer's name in the output; empty: its file name")
	peerArgs := fs.String("peer-args", "", "the peer's arguments, separated by spaces (it gets KUBECONFIG in its environment)")
	rerollEnv := fs.String("reroll-env", "", "side by side: Reroll's environment, e.g. \"GOGC=100 GOMEMLIMIT=96MiB\"; variants separated by ';' run one Reroll each (\";GOGC=100\": the defaults, then GOGC=100)")
	rerollArgs := fs.String("reroll-args", "", "side by side: Reroll's extra flags, separated by spaces")
	probeDesign := fs.String("probe", "", "internal: fill the cache of one design and print what it cost")
	kubeconfig := fs.String("kubeconfig", "", "internal: kubeconfig for -probe")
	_ = fs.Parse(os.Args[1:])
	if *probeDesign != "" {
		if err := probe(*probeDesign, *kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
		return
	}
	p, ok := profiles[*profileName]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown profile %q (small, large, fanout, xl, safety, fairness or settled)\n", *profileName)
		os.Exit(2)
	}
	if *secretBytes > 0 {
		p.SecretSize = *secretBytes
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *peer != "" || *rerollEnv != "" || *rerollArgs != "" {
		var cs []contender
		for _, env := range strings.Split(*rerollEnv, ";") {
			name := strings.TrimSpace("Reroll " + strings.Join(strings.Fields(env), " "))
			cs = append(cs, contender{Name: name, Binary: *rerollBin, Args: strings.Fields(*rerollArgs), Env: strings.Fields(env), Reroll: true})
		}
		if *peer != "" {
			name := *peerName
			if name == "" {
				name = filepath.Base(*peer)
			}
			cs = append(cs, contender{Name: name, Binary: *peer, Args: strings.Fields(*peerArgs)})
		}
		// Every controller reads Reloader's opt-in: the workloads of a
		// user who switches from Reloader.
		p.OptIn = reloaderAutoAnnotation
		res := newResult(p, *rerollBin)
		if err := sideBySide(ctx, res, p, *dir, cs); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		printSideBySide(res)
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		return
	}
	res, err := benchmark(ctx, p, *rerollBin, *dir, *window, *designs, *hold, *workers, *qps, safetyOptions{bound: *bound, rollout: *rollout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	printTable(res)
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	if *check && len(res.Failures) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d behaviour check(s) failed:\n  %s\n", len(res.Failures), strings.Join(res.Failures, "\n  "))
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// safetyOptions are the safety profile's flags.
type safetyOptions struct {
	bound   int
	rollout time.Duration
}

// newResult starts the result of a run: the profile, the machine, Reroll's
// commit and the load now.
func newResult(p profile, rerollBin string) *result {
	return &result{Profile: p, Machine: machineInfo(), Commit: commitOf(rerollBin), Load: loadAverage(), Started: time.Now().UTC()}
}

func benchmark(ctx context.Context, p profile, rerollBin, dir, window string, designs, hold bool, workers int, qps float64, so safetyOptions) (*result, error) {
	res := newResult(p, rerollBin)
	res.Window = window
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The settled profile needs the Deployment controller: its figure is
	// when the new ReplicaSets appear.
	plane, cfg, cs, err := startPlane(ctx, dir, "", p.Name == "settled")
	if err != nil {
		return nil, err
	}
	defer stopPlane(plane)
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		res.Machine.KubeServer = v.GitVersion
	}
	logf("creating the %s profile", p.Name)
	begin := time.Now()
	if res.Objects, err = p.create(ctx, cs, 64); err != nil {
		return nil, fmt.Errorf("creating the profile: %w", err)
	}
	res.CreateS = time.Since(begin).Seconds()
	logf("created %d objects in %s", res.Objects, since(begin))
	if hold {
		logf("holding; export KUBECONFIG=%s; Ctrl-C stops the control plane", plane.Kubeconfig)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	tr, err := newTracker(ctx, cs)
	if err != nil {
		return nil, err
	}
	ch := &changer{cs: cs, secretSize: p.SecretSize}
	if p.Name == "fanout" {
		if err := fanout(ctx, res, p, tr, ch, cfg, rerollBin, plane.Kubeconfig, dir, workers, qps); err != nil {
			return nil, err
		}
		evaluateFanout(res)
		return res, nil
	}
	if p.Name == "safety" {
		if err := safety(ctx, res, p, tr, ch, cs, rerollBin, plane.Kubeconfig, dir, so.bound, so.rollout); err != nil {
			return nil, err
		}
		evaluateSafety(res)
		return res, nil
	}
	if p.Name == "settled" {
		if err := settled(ctx, res, p, tr, ch, cs, rerollBin, plane.Kubeconfig, dir, begin); err != nil {
			return nil, err
		}
		evaluateSettled(res)
		return res, nil
	}
	if p.Name == "fairness" {
		if err := fairness(ctx, res, p, tr, ch, rerollBin, plane.Kubeconfig, dir); err != nil {
			return nil, err
		}
		evaluateFairness(res)
		return res, nil
	}
	if p.Name == "xl" {
		if err := xl(ctx, res, p, tr, ch, rerollBin, plane.Kubeconfig, dir); err != nil {
			return nil, err
		}
		evaluateXL(res)
		return res, nil
	}
	ws := p.workloads()
	pick := func(offset, n int) []workload {
		out := make([]workload, 0, n)
		for i := range min(n, len(ws)) {
			out = append(out, ws[(offset+i)%len(ws)])
		}
		return out
	}

	// Cold start: Reroll sees every workload for the first time.
	var flags []string
	if window != "" {
		flags = append(flags, "--coalesce-window="+window)
	}
	cold, b, err := startRun(ctx, tr, ch, rerollBin, plane.Kubeconfig, filepath.Join(dir, "reroll-cold.log"), p, flags, installWorkloads(ws, 20))
	if err != nil {
		return nil, err
	}
	res.Cold = *cold
	steps := []struct {
		name string
		do   func() error
	}{
		{"20 sequential changes (with the window)", func() (err error) {
			cold.Sequential, err = b.sequential(ctx, pick(0, 20), 20)
			return err
		}},
		{"100 label-only changes", func() error {
			r, err := b.labelOnly(ctx, pick(0, 50), 100)
			cold.LabelOnly = &r
			return err
		}},
		{"storm: 100 changes in one second", func() error {
			r, err := b.storm(ctx, pick(100, 50))
			cold.Storm = &r
			return err
		}},
		{"one ConfigMap shared by 50 Deployments", func() error {
			r, err := b.shared(ctx, p.sharedWorkloads())
			cold.Shared = &r
			return err
		}},
		{"ConfigMap and Secret of 10 workloads changed together", func() error {
			r, err := b.together(ctx, pick(200, 10))
			cold.Together = &r
			return err
		}},
	}
	for _, s := range steps {
		logf("cold run: %s", s.name)
		if err := s.do(); err != nil {
			b.reroll.stop()
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		// Asynchronous work of a step (Events are posted after the patch)
		// must not be counted in the next one.
		if err := b.quiet(ctx); err != nil {
			return nil, err
		}
		if _, err := b.reroll.memoryNow(); err != nil {
			return nil, err
		}
	}
	cold.PeakRSS, _ = b.reroll.peakRSS()
	cold.HeapPeak = b.reroll.heapPeak
	b.reroll.stop()
	res.Cold = *cold

	// Restart without a window: start-up with the workloads rolled so far
	// recorded and the others not (the first-sight rule stands in), and
	// the latency of Reroll's own work.
	restart, b, err := startRun(ctx, tr, ch, rerollBin, plane.Kubeconfig, filepath.Join(dir, "reroll-restart.log"), p, []string{"--coalesce-window=0"}, nil)
	if err != nil {
		return nil, err
	}
	n := 200
	if p.Name == "small" {
		n = 100
	}
	logf("restart: %d sequential changes (no window)", n)
	if restart.Sequential, err = b.sequential(ctx, pick(300, n), n); err != nil {
		b.reroll.stop()
		return nil, err
	}
	logf("restart: ConfigMap and Secret of 10 workloads changed together (no window)")
	r, err := b.together(ctx, pick(310, 10))
	if err != nil {
		b.reroll.stop()
		return nil, err
	}
	restart.Together = &r
	_, _ = b.reroll.memoryNow()
	restart.PeakRSS, _ = b.reroll.peakRSS()
	restart.HeapPeak = b.reroll.heapPeak
	b.reroll.stop()
	res.Restart = *restart

	if designs {
		for _, d := range []string{designDigest, designMetadata} {
			logf("design probe: %s", d)
			pr, err := runProbe(ctx, d, plane.Kubeconfig)
			if err != nil {
				return nil, err
			}
			res.Designs = append(res.Designs, pr)
		}
	}
	evaluate(res)
	return res, nil
}

// startRun starts Reroll, waits for ready, for first sight of every
// Deployment of p and for quiet, and measures the start. With install, it
// runs the install scenario: the objects of install change while Reroll
// looks at the workloads for the first time.
func startRun(ctx context.Context, tr *tracker, ch *changer, bin, kubeconfig, logPath string, p profile, flags []string, install []workload) (*run, *bench, error) {
	deployments := p.totalDeployments()
	logf("starting Reroll %s (log %s)", strings.Join(flags, " "), logPath)
	rp, err := startReroll(ctx, bin, kubeconfig, logPath, 5*time.Minute, flags...)
	if err != nil {
		return nil, nil, err
	}
	r := &run{Flags: flags, StartupSeconds: rp.Ready.Sub(rp.Started).Seconds()}
	var ic *installChanges
	if len(install) > 0 {
		logf("install scenario: changing the objects of %d workloads over %s while Reroll records", len(install), installSpread(deployments))
		ic = startInstallChanges(ctx, ch, install, installSpread(deployments))
	}
	// First sight writes nothing (--defer-record), but a Reroll run with
	// --defer-record=false writes one PATCH per Deployment at its
	// --kube-api-qps (50): 10,000 Deployments take 200 s at best.
	if err := rp.waitFirstSight(ctx, p.references(), max(5*time.Minute, time.Duration(deployments/25)*time.Second)); err != nil {
		rp.stop()
		return nil, nil, err
	}
	r.FirstSightSeconds = time.Since(rp.Ready).Seconds()
	lookedAt := time.Now()
	b := &bench{tr: tr, ch: ch, reroll: rp, window: controller.DefaultCoalesceWindow}
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--coalesce-window="); ok {
			if b.window, err = time.ParseDuration(v); err != nil {
				rp.stop()
				return nil, nil, err
			}
		}
	}
	if ic != nil {
		if r.Install, err = ic.finish(ctx, b, lookedAt); err != nil {
			rp.stop()
			return nil, nil, err
		}
		logf("install scenario: %d changes (%d before Reroll had looked at every workload); rollouts per changed workload %d..%d, of the others %d",
			r.Install.Changes, r.Install.BeforeFirstSight, r.Install.RolloutsMin, r.Install.RolloutsMax, r.Install.OtherRollouts)
	}
	if err := b.quiet(ctx); err != nil {
		rp.stop()
		return nil, nil, err
	}
	if r.StartRequests, err = rp.requests(); err != nil {
		rp.stop()
		return nil, nil, err
	}
	if r.Install != nil {
		r.Install.DeploymentPatches = r.StartRequests.succeeded("patch", "deployments")
		r.Install.ConfigMapWrites = r.StartRequests.succeeded("create", "configmaps") + r.StartRequests.succeeded("update", "configmaps")
	}
	if r.AfterSync, err = rp.memoryNow(); err != nil {
		rp.stop()
		return nil, nil, err
	}
	logf("ready after %.2fs, every Deployment looked at %.2fs later; RSS %.1f MiB, heap %.1f MiB", r.StartupSeconds, r.FirstSightSeconds, r.AfterSync.RSS/mib, r.AfterSync.HeapAlloc/mib)
	return r, b, nil
}

const mib = 1 << 20

// evaluate fills Targets (the large profile's targets, shown for any
// profile) and Failures (behaviours that must hold on any profile).
func evaluate(res *result) {
	c := res.Cold
	add := func(name string, v, limit float64, unit string) {
		res.Targets = append(res.Targets, target{Name: name, Value: v, Limit: limit, Unit: unit, Met: v <= limit})
	}
	add("RSS after sync", c.AfterSync.RSS/mib, 64, "MiB")
	add("peak RSS (cold run)", c.PeakRSS/mib, 96, "MiB")
	add("latency p99 (window 0)", res.Restart.Sequential.P99, 50, "ms")
	if c.LabelOnly != nil {
		add("GET+LIST per label-only change", (c.LabelOnly.Requests.count("get", "")+c.LabelOnly.Requests.count("list", ""))/float64(c.LabelOnly.Changes), 0, "")
	}
	add("start-up to synced (cold)", c.StartupSeconds, 10, "s")
	add("start-up to synced (restart)", res.Restart.StartupSeconds, 10, "s")

	fail := func(format string, args ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, args...)) }
	checkInstall(res)
	if l := c.LabelOnly; l != nil && (l.Requests.total() != 0 || l.Rollouts != 0) {
		fail("label-only changes made %v requests and %d rollouts, want none", l.Requests, l.Rollouts)
	}
	for name, r := range map[string]*rolloutsResult{"storm": c.Storm, "shared ConfigMap": c.Shared, "together": c.Together} {
		if r == nil {
			continue
		}
		if r.RolloutsMin != 1 || r.RolloutsMax != 1 {
			fail("%s: rollouts per workload between %d and %d, want exactly 1", name, r.RolloutsMin, r.RolloutsMax)
		}
		if p := r.Requests.count("patch", "deployments"); p != float64(r.Workloads) {
			fail("%s: %v Deployment patches for %d workloads, want one each", name, p, r.Workloads)
		}
		if g := r.Requests.count("get", "") + r.Requests.count("list", ""); g != 0 {
			fail("%s: %v GET/LIST requests, want none", name, g)
		}
	}
	for name, r := range map[string]run{"cold": res.Cold, "restart": res.Restart} {
		if n := r.StartRequests.count("list", "deployments") + r.StartRequests.count("list", "configmaps") + r.StartRequests.count("list", "secrets"); n > 3+3 {
			fail("%s start: %v LIST requests for 3 kinds", name, n)
		}
	}
}

// evaluateFanout fills Targets and Failures of the fanout profile.
func evaluateFanout(res *result) {
	f := res.Fanout
	res.Targets = append(res.Targets, target{
		Name: "all patched / baseline at --kube-api-qps", Value: f.AllPatchedSeconds / f.BaselineSeconds, Limit: 1.2, Unit: "x",
		Met: f.AllPatchedSeconds <= 1.2*f.BaselineSeconds,
	})
	if f.RolloutsMin != 1 || f.RolloutsMax != 1 {
		res.Failures = append(res.Failures, fmt.Sprintf("fanout: rollouts per workload between %d and %d, want exactly 1", f.RolloutsMin, f.RolloutsMax))
	}
	if p := f.Requests.count("patch", "deployments"); p != float64(f.Workloads) {
		res.Failures = append(res.Failures, fmt.Sprintf("fanout: %v Deployment patches for %d workloads, want one each", p, f.Workloads))
	}
}

// printHeader prints the profile, the commit, the machine and its load.
func printHeader(w *tabwriter.Writer, res *result) {
	p := res.Profile
	fmt.Fprintf(w, "Reroll bench, profile %s: %d namespaces x (%d Secrets of %d B, %d ConfigMaps, %d Deployments) + %d Deployments sharing one ConfigMap%s\n",
		p.Name, p.Namespaces, p.SecretsPerNamespace, p.SecretSize, p.ConfigMapsPerNamespace, p.DeploymentsPerNamespace, p.SharedDeployments,
		map[bool]string{true: " and one Secret", false: ""}[p.SharedSecret])
	commit := res.Commit
	if commit == "" {
		commit = "unknown (built without VCS information)"
	}
	fmt.Fprintf(w, "commit %s, started %s, load average %s\n", commit, res.Started.Format(time.RFC3339), res.Load)
	m := res.Machine
	fmt.Fprintf(w, "machine: %d CPUs (%s), %d MiB, kernel %s, %s", m.CPUs, m.CPU, m.MemoryMiB, m.Kernel, m.Go)
	if m.KubeServer != "" {
		fmt.Fprintf(w, ", kube-apiserver %s", m.KubeServer)
	}
	if res.Objects > 0 {
		fmt.Fprintf(w, "; %d objects created in %.1fs", res.Objects, res.CreateS)
	}
	fmt.Fprint(w, "\n\n")
}

func printTable(res *result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	printHeader(w, res)
	if f := res.Fanout; f != nil {
		fmt.Fprintf(w, "cold start: start-up to /readyz %.2f s, every Deployment looked at %.2f s later, RSS %.1f MiB\n", res.Cold.StartupSeconds, res.Cold.FirstSightSeconds, res.Cold.AfterSync.RSS/mib)
		fmt.Fprintf(w, "fanout: 1 ConfigMap change -> %d Deployments (%d workers, %d validators)\tall patched after %.2f s; rollouts per workload %d..%d; Reroll CPU %.2f s\n", f.Workloads, f.Workers, f.Validators, f.AllPatchedSeconds, f.RolloutsMin, f.RolloutsMax, f.CPUSeconds)
		fmt.Fprintf(w, "  requests\t%s\n", formatRequests(f.Requests, 1))
		fmt.Fprintf(w, "  baseline: %d PATCHes at QPS %v, burst %d\t%.2f s\n\n", f.Workloads, f.QPS, rerollBurst, f.BaselineSeconds)
		printTargets(w, res)
		return
	}
	if sf := res.Safety; sf != nil {
		fmt.Fprintf(w, "cold start: start-up to /readyz %.2f s, every Deployment looked at %.2f s later, RSS %.1f MiB\n", res.Cold.StartupSeconds, res.Cold.FirstSightSeconds, res.Cold.AfterSync.RSS/mib)
		fmt.Fprintf(w, "safety: 1 Secret change -> %d Deployments, --max-concurrent-rollouts=%d, simulated rollouts of %.1f s\tmost running at once %d; all rolled out after %.1f s; rollouts per workload %d..%d\n\n",
			sf.Workloads, sf.Bound, sf.RolloutSeconds, sf.MaxRunning, sf.AllDoneSeconds, sf.RolloutsMin, sf.RolloutsMax)
		printTargets(w, res)
		return
	}
	if s := res.Settled; s != nil {
		fmt.Fprintf(w, "settled: %d Deployments settled by kube-controller-manager %.1f s after their creation began; Reroll ready %.2f s after its exec, RSS at the end %.1f MiB, peak %.1f MiB\n", s.Deployments, s.SettleSeconds, s.ReadySeconds, res.Cold.AfterSync.RSS/mib, res.Cold.PeakRSS/mib)
		fmt.Fprintf(w, "  %d ConfigMaps changed %.1f s after Reroll's exec\tnew ReplicaSets after p50 %.0f ms, max %.0f ms; patched templates after p50 %.0f ms, max %.0f ms\n", settledChanges, s.ChangeAfterStartSeconds, s.Install.P50, s.Install.Max, s.InstallTemplate.P50, s.InstallTemplate.Max)
		fmt.Fprintf(w, "  %d other ConfigMaps changed once Reroll was quiet\tnew ReplicaSets after p50 %.0f ms, max %.0f ms\n", settledChanges, s.Later.P50, s.Later.Max)
		fmt.Fprintf(w, "  Deployment PATCHes from the start until quiet %.0f; generations of unchanged Deployments bumped %d; rollouts per changed workload %d..%d, of the others %d\n\n", s.DeploymentPatches, s.GenerationsBumped, s.RolloutsMin, s.RolloutsMax, s.OtherRollouts)
		printTargets(w, res)
		return
	}
	if f := res.Fairness; f != nil {
		fmt.Fprintf(w, "cold start: start-up to /readyz %.2f s, every Deployment looked at %.2f s later, RSS %.1f MiB, peak %.1f MiB\n", res.Cold.StartupSeconds, res.Cold.FirstSightSeconds, res.Cold.AfterSync.RSS/mib, res.Cold.PeakRSS/mib)
		fmt.Fprintf(w, "fairness: one change in %s, nothing else to do\tp50 %.0f ms, max %.0f ms (%d changes)\n", namespaceName(0), f.Alone.P50, f.Alone.Max, f.Alone.N)
		fmt.Fprintf(w, "  the same, %.0f ms after a change read by %d Deployments of %s\tp50 %.0f ms, max %.0f ms (%d rounds); of the %d, rolled before it: %v; all rolled after %v s\n",
			f.FloodLeadMillis, f.Flood, sharedNamespace, f.DuringFlood.P50, f.DuringFlood.Max, f.DuringFlood.N, f.Flood, f.RolledBefore, roundAll(f.FloodSeconds))
		fmt.Fprintf(w, "  rollouts per workload and round %d..%d\n\n", f.RolloutsMin, f.RolloutsMax)
		printTargets(w, res)
		return
	}
	for _, r := range []struct {
		name string
		run  run
	}{{"cold start (default flags" + map[bool]string{true: "", false: ", --coalesce-window=" + res.Window}[res.Window == ""] + ")", res.Cold}, {"restart with --coalesce-window=0", res.Restart}} {
		c := r.run
		if c.StartupSeconds == 0 {
			// The xl profile has no restart run.
			continue
		}
		fmt.Fprintf(w, "%s\n", r.name)
		fmt.Fprintf(w, "  start-up to /readyz\t%.2f s\n", c.StartupSeconds)
		fmt.Fprintf(w, "  then every Deployment looked at\t%.2f s\n", c.FirstSightSeconds)
		fmt.Fprintf(w, "  requests until quiet\t%s\n", formatRequests(c.StartRequests, 1))
		if i := c.Install; i != nil {
			fmt.Fprintf(w, "  install: %d ConfigMaps/Secrets changed over %.0f s from ready\t%d before Reroll had looked at every workload; rollouts per changed workload %d..%d, of the others %d; Deployment PATCHes %.0f, ConfigMap writes %.0f\n",
				i.Changes, i.SpreadSeconds, i.BeforeFirstSight, i.RolloutsMin, i.RolloutsMax, i.OtherRollouts, i.DeploymentPatches, i.ConfigMapWrites)
		}
		fmt.Fprintf(w, "  RSS / heap after sync\t%.1f MiB / %.1f MiB\n", c.AfterSync.RSS/mib, c.AfterSync.HeapAlloc/mib)
		fmt.Fprintf(w, "  peak RSS (VmHWM) / peak heap scraped\t%.1f MiB / %.1f MiB\n", c.PeakRSS/mib, c.HeapPeak/mib)
		s := c.Sequential
		fmt.Fprintf(w, "  change -> patched template, %d sequential\tp50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms\n", s.N, s.P50, s.P95, s.P99, s.Max)
		if l := c.LabelOnly; l != nil {
			fmt.Fprintf(w, "  %d label-only changes\t%d rollouts; requests per change: %s\n", l.Changes, l.Rollouts, formatRequests(l.Requests, float64(l.Changes)))
		}
		for _, x := range []struct {
			name string
			r    *rolloutsResult
		}{{"storm", c.Storm}, {"shared ConfigMap", c.Shared}, {"together", c.Together}} {
			if x.r == nil {
				continue
			}
			fmt.Fprintf(w, "  %s: %d changes to %d workloads in %.2f s\tall patched after %.2f s; rollouts per workload %d..%d; requests: %s\n",
				x.name, x.r.Changes, x.r.Workloads, x.r.SendSeconds, x.r.AllPatchedSeconds, x.r.RolloutsMin, x.r.RolloutsMax, formatRequests(x.r.Requests, 1))
		}
		fmt.Fprintln(w)
	}
	if len(res.Designs) > 0 {
		fmt.Fprintf(w, "cache designs (informers only, one process each)\tsync\tlive heap\tRSS\tpeak RSS\trequests\n")
		for _, d := range res.Designs {
			fmt.Fprintf(w, "  %s\t%.2f s\t%.1f MiB\t%.1f MiB\t%.1f MiB\t%s\n", d.Design, d.SyncSeconds, d.HeapAfterGC/mib, d.RSS/mib, d.PeakRSS/mib, formatRequests(d.Requests, 1))
		}
		fmt.Fprintln(w)
	}
	printTargets(w, res)
}

// printTargets prints the targets and the behaviour checks, and flushes w.
func printTargets(w *tabwriter.Writer, res *result) {
	// The small profile is measured against the large profile's targets.
	of := res.Profile.Name
	if of == "small" {
		of = "large"
	}
	fmt.Fprintf(w, "target (%s profile)\tvalue\tlimit\tmet\n", of)
	for _, t := range res.Targets {
		fmt.Fprintf(w, "  %s\t%.2f %s\t%.1f %s\t%v\n", t.Name, t.Value, t.Unit, t.Limit, t.Unit, map[bool]string{true: "yes", false: "NO"}[t.Met])
	}
	if len(res.Failures) > 0 {
		fmt.Fprintf(w, "\nbehaviour failures:\n  %s\n", strings.Join(res.Failures, "\n  "))
	} else {
		fmt.Fprintf(w, "\nbehaviour checks: all passed\n")
	}
	w.Flush()
}

// roundAll rounds each of xs to a tenth.
func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*10+0.5)) / 10
	}
	return out
}

func formatRequests(r apiRequests, per float64) string {
	if len(r) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range r {
		parts = append(parts, fmt.Sprintf("%s %.4g", k, v/per))
	}
	sortStrings(parts)
	return strings.Join(parts, ", ")
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if kb, err := procMeminfo("MemTotal"); err == nil {
		m.MemoryMiB = int(kb / 1024)
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		var b []byte
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		m.Kernel = string(b)
	}
	return m
}

func procMeminfo(field string) (float64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb float64
			_, err := fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return kb, err
		}
	}
	return 0, errors.New("no " + field)
}
