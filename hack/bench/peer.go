package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/test/controlplane"
)

// contender is one controller of a side-by-side run: Reroll, started with
// its default flags, or the peer (-peer), another controller's binary
// started with -peer-args and KUBECONFIG in its environment.
type contender struct {
	Name   string
	Binary string
	Args   []string
	// Env is added to the controller's environment (e.g. GOGC).
	Env []string
	// Reroll: started by startReroll, ready once /readyz answers; the
	// peer is ready once it makes no request for a while.
	Reroll bool
}

// sideRun is what one controller did in a side-by-side run. Every figure
// is taken the same way for both: CPU and memory from the kernel
// (/proc/<pid>, the child's rusage), requests from the counting proxy,
// rollouts from the bench's own watch.
type sideRun struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"`
	// Build is the binary's Go version, main module and VCS revision, from
	// its build information.
	Build string `json:"build"`
	// LoadStart and LoadEnd are /proc/loadavg when the controller started
	// and stopped: other work on the machine.
	LoadStart string `json:"loadStart"`
	LoadEnd   string `json:"loadEnd"`
	// Objects were created in CreateSeconds on a fresh control plane.
	Objects    int     `json:"objectsCreated"`
	CreateS    float64 `json:"createSeconds"`
	KubeServer string  `json:"kubeServer"`
	// StartSeconds is from exec until quiet: no request for a second
	// (Reroll: after /readyz; its first sight included).
	StartSeconds    float64     `json:"startSeconds"`
	StartCPUSeconds float64     `json:"startCPUSeconds"`
	StartRequests   apiRequests `json:"startRequests"`
	// RSSAfterSync is VmRSS once quiet after the start; RSSQuiet10s VmRSS
	// 10 s later, nothing having changed (what an idle controller holds
	// once its runtime has settled); PeakRSS VmHWM at the end of the run.
	RSSAfterSync float64 `json:"rssAfterSyncBytes"`
	RSSQuiet10s  float64 `json:"rssQuiet10sBytes"`
	PeakRSS      float64 `json:"peakRSSBytes"`
	// AnonAfterSync, AnonQuiet10s and PeakAnon are the same moments'
	// RssAnon: the resident memory that is not the binary's or another
	// file's pages, which a container's memory limit cannot reclaim (file
	// pages it can drop and read again). PeakAnon is the largest of
	// samples taken every 100 ms from the start to the end of the run
	// (the kernel keeps no high-water mark of it).
	AnonAfterSync float64 `json:"rssAnonAfterSyncBytes,omitempty"`
	AnonQuiet10s  float64 `json:"rssAnonQuiet10sBytes,omitempty"`
	PeakAnon      float64 `json:"peakRSSAnonBytes,omitempty"`
	// Fanout is one change of the ConfigMap every shared Deployment reads;
	// Storm 100 changes in one second to 50 workloads (ConfigMap, then
	// Secret, of each).
	Fanout *rolloutsResult `json:"fanout,omitempty"`
	Storm  *rolloutsResult `json:"storm,omitempty"`
	// CPUSeconds is user and system time of the whole run, from the
	// child's rusage after it exited; Requests every request of the run.
	CPUSeconds float64     `json:"cpuSeconds"`
	Requests   apiRequests `json:"requests"`
}

// quietSettle is how long after the start's quiet RSSQuiet10s is read.
const quietSettle = 10 * time.Second

// sideBySide runs each contender on a fresh control plane with the same
// profile, one after the other, and returns the result with a sideRun
// each.
func sideBySide(ctx context.Context, res *result, p profile, dir string, cs []contender) error {
	for _, c := range cs {
		r, err := runSide(ctx, p, dir, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		res.SideBySide = append(res.SideBySide, *r)
		res.Machine.KubeServer = r.KubeServer
	}
	return nil
}

func runSide(ctx context.Context, p profile, dir string, c contender) (*sideRun, error) {
	// Ends the bench's watches of this run's plane.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &sideRun{Name: c.Name, Args: c.Args, Env: c.Env, Build: buildOf(c.Binary)}
	plane, _, client, err := startPlane(ctx, dir, c.Name+": ", false)
	if err != nil {
		return nil, err
	}
	defer stopPlane(plane)
	logf("%s: creating the %s profile", c.Name, p.Name)
	begin := time.Now()
	if r.Objects, err = p.create(ctx, client, 64); err != nil {
		return nil, fmt.Errorf("creating the profile: %w", err)
	}
	r.CreateS = time.Since(begin).Seconds()
	if v, err := client.Discovery().ServerVersion(); err == nil {
		r.KubeServer = v.GitVersion
	}
	tr, err := newTracker(ctx, client)
	if err != nil {
		return nil, err
	}
	px, err := startCountingProxy(plane.Config)
	if err != nil {
		return nil, err
	}
	defer px.stop()
	kubeconfig := filepath.Join(dir, "proxy.kubeconfig")
	if err := px.writeKubeconfig(kubeconfig); err != nil {
		return nil, err
	}

	r.LoadStart = loadAverage()
	logPath := filepath.Join(dir, "side-"+fileName(c.Name)+".log")
	b := &bench{tr: tr, ch: &changer{cs: client, secretSize: p.SecretSize}, count: px.requests}
	started := time.Now()
	var cmd *exec.Cmd
	var stopOnce func()
	if c.Reroll {
		logf("%s: starting %s (log %s)", c.Name, c.Binary, logPath)
		// The child inherits the environment when it starts: set c.Env
		// for that moment only.
		restore := setEnv(c.Env)
		rp, err := startReroll(ctx, c.Binary, kubeconfig, logPath, 5*time.Minute, c.Args...)
		restore()
		if err != nil {
			return nil, err
		}
		cmd, stopOnce, b.reroll, b.window = rp.cmd, sync.OnceFunc(rp.stop), rp, controller.DefaultCoalesceWindow
	} else {
		logf("%s: starting %s %s (log %s)", c.Name, c.Binary, strings.Join(c.Args, " "), logPath)
		var done chan error
		if cmd, done, err = startPeer(c.Binary, c.Args, c.Env, kubeconfig, logPath); err != nil {
			return nil, err
		}
		stopOnce = sync.OnceFunc(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	defer stopOnce()
	pid := cmd.Process.Pid
	peakAnon := sampleMax(ctx, pid, "RssAnon", 100*time.Millisecond)
	if err := quietProxy(ctx, px, pid, 5*time.Minute+time.Duration(p.totalDeployments()/25)*time.Second); err != nil {
		return nil, err
	}
	r.StartSeconds = time.Since(started).Seconds()
	if r.StartCPUSeconds, err = procCPU(pid); err != nil {
		return nil, err
	}
	r.StartRequests, _ = px.requests()
	if r.RSSAfterSync, err = procStatus(pid, "VmRSS"); err != nil {
		return nil, err
	}
	r.AnonAfterSync, _ = procStatus(pid, "RssAnon")
	logf("%s: quiet %.1f s after start, CPU %.2f s, RSS %.1f MiB, %v requests", c.Name, r.StartSeconds, r.StartCPUSeconds, r.RSSAfterSync/mib, r.StartRequests.total())
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(quietSettle):
	}
	if r.RSSQuiet10s, err = procStatus(pid, "VmRSS"); err != nil {
		return nil, err
	}
	r.AnonQuiet10s, _ = procStatus(pid, "RssAnon")
	logf("%s: RSS %.1f MiB %s later", c.Name, r.RSSQuiet10s/mib, quietSettle)

	if p.SharedDeployments > 0 {
		logf("%s: fanout: one ConfigMap read by %d Deployments changes", c.Name, p.SharedDeployments)
		// Reloader takes minutes here: each workload gets the whole wait.
		f, err := b.shared(ctx, p.sharedWorkloads())
		if err != nil {
			return nil, err
		}
		r.Fanout = &f
	}
	if ws := p.workloads(); len(ws) >= 50 {
		logf("%s: storm: 100 changes in one second", c.Name)
		s, err := b.storm(ctx, ws[:50])
		if err != nil {
			return nil, err
		}
		r.Storm = &s
	}
	r.Requests, _ = px.requests()
	if r.PeakRSS, err = procStatus(pid, "VmHWM"); err != nil {
		return nil, err
	}
	r.PeakAnon = peakAnon()
	r.LoadEnd = loadAverage()
	stopOnce()
	st := cmd.ProcessState
	if st == nil {
		return nil, errors.New("no exit status of the controller")
	}
	r.CPUSeconds = (st.UserTime() + st.SystemTime()).Seconds()
	logf("%s: done; CPU %.2f s, peak RSS %.1f MiB, %v requests", c.Name, r.CPUSeconds, r.PeakRSS/mib, r.Requests.total())
	return r, nil
}

// sampleMax reads field of /proc/<pid>/status every interval until ctx is
// done or the process is gone, and returns what gives the largest value
// read so far, in bytes (0 if none was).
func sampleMax(ctx context.Context, pid int, field string, interval time.Duration) func() float64 {
	var mu sync.Mutex
	var peak float64
	read := func() bool {
		v, err := procStatus(pid, field)
		if err != nil {
			return false
		}
		mu.Lock()
		peak = max(peak, v)
		mu.Unlock()
		return true
	}
	read()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !read() {
					return
				}
			}
		}
	}()
	return func() float64 {
		read()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// startPeer starts bin with args and KUBECONFIG=kubeconfig, its output in
// logPath; done receives Wait's answer.
func startPeer(bin string, args, env []string, kubeconfig, logPath string) (*exec.Cmd, chan error, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done, nil
}

// setEnv sets each KEY=VALUE of env in the bench's environment and returns
// what puts the previous values back.
func setEnv(env []string) (restore func()) {
	var undo []func()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if old, ok := os.LookupEnv(k); ok {
			undo = append(undo, func() { _ = os.Setenv(k, old) })
		} else {
			undo = append(undo, func() { _ = os.Unsetenv(k) })
		}
		_ = os.Setenv(k, v)
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// quietProxy waits until the process has made at least one request and
// then none for two seconds, during which it used less than idleCPU of
// CPU time, or fails after timeout or when the process is gone. The CPU
// condition tells a controller that is still decoding the initial state
// of one long WATCH (Reloader's 100,000 Secrets on the xl profile: one
// request, then a minute of work) from one that is done.
func quietProxy(ctx context.Context, px *countingProxy, pid int, timeout time.Duration) error {
	const idleCPU = 0.1 // seconds of CPU time in the 2 s of quiet
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	var cpuSince float64
	for {
		if _, err := procStatus(pid, "VmRSS"); err != nil {
			return fmt.Errorf("the controller exited (see its log): %w", err)
		}
		cpu, err := procCPU(pid)
		if err != nil {
			return fmt.Errorf("the controller exited (see its log): %w", err)
		}
		n := px.arrived()
		if n != last || cpu-cpuSince >= idleCPU {
			last, since, cpuSince = n, time.Now(), cpu
		} else if n > 0 && time.Since(since) >= 2*time.Second {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still making requests after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// procCPU returns the user and system CPU seconds of a running process,
// from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s, the
// USER_HZ of every Linux architecture Go runs on).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	u, err := strconv.ParseFloat(f[11], 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseFloat(f[12], 64)
	if err != nil {
		return 0, err
	}
	return (u + s) / 100, nil
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// buildOf describes a Go binary from its build information: Go version,
// main module and version, and VCS revision (with "+modified" for a dirty
// tree) when the build recorded one.
func buildOf(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	s := bi.GoVersion + ", " + bi.Main.Path
	if bi.Main.Version != "" {
		s += " " + bi.Main.Version
	}
	rev := revisionOf(bi.Settings)
	if rev == "" && bi.Main.Path == "github.com/reroll/reroll" {
		rev = stampedCommit(path)
	}
	if rev != "" {
		s += ", commit " + rev
	}
	return s
}

// commitOf is the VCS revision a Go binary was built from, with
// "+modified" for a dirty tree: from its build information; or, when the
// build recorded none (-buildvcs=false, as hack/build.sh builds), the
// commit its `--version` line names (hack/build.sh stamps it; a Reroll
// binary built from another commit, run as a peer, is named by its own);
// or else the repository's HEAD now, which is what `make bench` has just
// built, marked "(repository HEAD)".
func commitOf(path string) string {
	if bi, err := buildinfo.ReadFile(path); err == nil {
		if rev := revisionOf(bi.Settings); rev != "" {
			return rev
		}
	}
	if rev := stampedCommit(path); rev != "" {
		return rev
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return ""
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		rev += "+modified"
	}
	return rev + " (repository HEAD)"
}

// stampedCommitRE finds the commit in a Reroll binary's --version line,
// "reroll VERSION (commit COMMIT, built DATE, GO, PLATFORM)"; "unknown"
// (a plain go build) does not match.
var stampedCommitRE = regexp.MustCompile(`\(commit ([0-9a-f]{7,40}(?:-dirty)?),`)

// stampedCommit runs path --version (within 5 s) and returns the commit
// its line names, or "" when it names none or is not a Reroll binary.
func stampedCommit(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	if m := stampedCommitRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

func revisionOf(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(12, len(rev))] + modified
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// creates formats the ConfigMaps and Secrets that requests created, and in
// brackets the creates the API server refused (an AlreadyExists, for one).
func creates(requests apiRequests) string {
	var ok, refused [2]float64
	for k, v := range requests {
		for i, res := range []string{"configmaps", "secrets"} {
			switch {
			case k == "create "+res:
				ok[i] += v
			case strings.HasPrefix(k, "create "+res+" code="):
				refused[i] += v
			}
		}
	}
	return fmt.Sprintf("%.0f (%.0f) / %.0f (%.0f)", ok[0], refused[0], ok[1], refused[1])
}

// printSideBySide prints one column per controller.
func printSideBySide(res *result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	printHeader(w, res)
	runs := res.SideBySide
	row := func(name string, f func(r sideRun) string) {
		fmt.Fprintf(w, "%s", name)
		for _, r := range runs {
			fmt.Fprintf(w, "\t%s", f(r))
		}
		fmt.Fprintln(w)
	}
	row("", func(r sideRun) string { return r.Name })
	row("build", func(r sideRun) string { return r.Build })
	row("args, environment", func(r sideRun) string {
		if len(r.Args)+len(r.Env) == 0 {
			return "(defaults)"
		}
		return strings.Join(slices.Concat(r.Args, r.Env), " ")
	})
	row("load average at start / end", func(r sideRun) string { return r.LoadStart + " / " + r.LoadEnd })
	row("objects created (fresh plane)", func(r sideRun) string { return fmt.Sprintf("%d in %.1f s", r.Objects, r.CreateS) })
	row("start: exec until quiet", func(r sideRun) string { return fmt.Sprintf("%.1f s", r.StartSeconds) })
	row("  CPU / requests until quiet", func(r sideRun) string {
		return fmt.Sprintf("%.2f s / %.0f", r.StartCPUSeconds, r.StartRequests.total())
	})
	row("RSS after sync / peak (VmHWM)", func(r sideRun) string {
		return fmt.Sprintf("%.1f / %.1f MiB", r.RSSAfterSync/mib, r.PeakRSS/mib)
	})
	row("RSS 10 s after quiet, nothing changed", func(r sideRun) string { return fmt.Sprintf("%.1f MiB", r.RSSQuiet10s/mib) })
	row("anonymous RSS after sync / 10 s later / peak", func(r sideRun) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f MiB", r.AnonAfterSync/mib, r.AnonQuiet10s/mib, r.PeakAnon/mib)
	})
	rollouts := func(x *rolloutsResult) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("all rolled %.1f s, last rollout %.1f s; rollouts per workload %d..%d", x.AllPatchedSeconds, x.LastRolloutSeconds, x.RolloutsMin, x.RolloutsMax)
	}
	row("fanout: 1 change, shared ConfigMap", func(r sideRun) string { return rollouts(r.Fanout) })
	row("storm: 100 changes to 50 workloads in 1 s", func(r sideRun) string { return rollouts(r.Storm) })
	// Versioned config's copies: one create per changed source per
	// namespace is the goal, however many workloads share it.
	row("fanout: ConfigMaps / Secrets created (refused)", func(r sideRun) string {
		if r.Fanout == nil {
			return "-"
		}
		return creates(r.Fanout.Requests)
	})
	row("ConfigMaps / Secrets created, whole run (refused)", func(r sideRun) string { return creates(r.Requests) })
	row("CPU, whole run (rusage)", func(r sideRun) string { return fmt.Sprintf("%.2f s", r.CPUSeconds) })
	row("API requests, whole run", func(r sideRun) string { return fmt.Sprintf("%.0f", r.Requests.total()) })
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "%s requests:\t%s\n", r.Name, formatRequests(r.Requests, 1))
	}
	w.Flush()
}
