package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rerollProcess is the built Reroll binary running as a local process.
type rerollProcess struct {
	cmd         *exec.Cmd
	done        chan error
	metricsAddr string
	probeAddr   string
	// Started is when the process was started; Ready when /readyz first
	// answered 200.
	Started, Ready time.Time
	// heapPeak is the highest go_memstats_heap_alloc_bytes scraped.
	heapPeak float64
}

// startReroll starts bin with a kubeconfig, its metrics and probes on free
// loopback ports and extra flags, and returns once /readyz answers 200
// (the informer caches are synced) or fails after timeout.
func startReroll(ctx context.Context, bin, kubeconfig, logPath string, timeout time.Duration, extra ...string) (*rerollProcess, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	r := &rerollProcess{
		metricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		probeAddr:   fmt.Sprintf("127.0.0.1:%d", ports[1]),
		done:        make(chan error, 1),
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + r.metricsAddr, "--health-probe-bind-address=" + r.probeAddr, "--digest-key-namespace=default", "--metrics-secure=false"}, extra...)
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r.Started = time.Now()
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	lastScrape := time.Time{}
	for {
		select {
		case err := <-r.done:
			return nil, fmt.Errorf("reroll exited before it was ready (%v); see %s", err, logPath)
		case <-ctx.Done():
			r.stop()
			return nil, ctx.Err()
		default:
		}
		if resp, err := client.Get("http://" + r.probeAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.Ready = time.Now()
				r.sampleHeap()
				return r, nil
			}
		}
		// Sample the heap while the caches fill, for its peak; not too
		// often, since a scrape costs Reroll CPU.
		if time.Since(lastScrape) > 250*time.Millisecond {
			r.sampleHeap()
			lastScrape = time.Now()
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("reroll was not ready after %s; see %s", timeout, logPath)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits up to 10 s before SIGKILL.
func (r *rerollProcess) stop() {
	if r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// sample is one Prometheus sample.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads Reroll's /metrics.
func (r *rerollProcess) scrape() ([]sample, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + r.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

func (r *rerollProcess) sampleHeap() {
	if s, err := r.scrape(); err == nil {
		r.heapPeak = max(r.heapPeak, value(s, "go_memstats_heap_alloc_bytes"))
	}
}

// parseMetrics parses the Prometheus text format, enough for the metrics
// of client_golang: no escaped quotes or commas in label values.
func parseMetrics(body io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		s := sample{name: line[:sp], labels: map[string]string{}, value: v}
		if i := strings.IndexByte(s.name, '{'); i >= 0 {
			for _, kv := range strings.Split(strings.TrimSuffix(s.name[i+1:], "}"), ",") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					s.labels[k] = strings.Trim(v, `"`)
				}
			}
			s.name = s.name[:i]
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// value is the sum of the samples named name.
func value(samples []sample, name string) float64 {
	var v float64
	for _, s := range samples {
		if s.name == name {
			v += s.value
		}
	}
	return v
}

// apiRequests are Reroll's API requests by "verb resource" (e.g.
// "patch deployments"), with " code=N" appended for answers other than
// 2xx, from reroll_api_requests_total.
type apiRequests map[string]float64

func requestsOf(samples []sample) apiRequests {
	out := apiRequests{}
	for _, s := range samples {
		if s.name != "reroll_api_requests_total" {
			continue
		}
		resource := s.labels["resource"]
		if resource == "" {
			resource = "(discovery)"
		}
		k := s.labels["verb"] + " " + resource
		if c := s.labels["code"]; !strings.HasPrefix(c, "2") {
			k += " code=" + c
		}
		out[k] += s.value
	}
	return out
}

// minus returns the requests made since before, without zero entries.
func (a apiRequests) minus(before apiRequests) apiRequests {
	out := apiRequests{}
	for k, v := range a {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (a apiRequests) total() float64 {
	var t float64
	for _, v := range a {
		t += v
	}
	return t
}

// count is the number of requests with the verb (and resource, unless "").
func (a apiRequests) count(verb, resource string) float64 {
	var t float64
	for k, v := range a {
		f := strings.Fields(k)
		if f[0] == verb && (resource == "" || (len(f) > 1 && f[1] == resource)) {
			t += v
		}
	}
	return t
}

func (r *rerollProcess) requests() (apiRequests, error) {
	s, err := r.scrape()
	if err != nil {
		return nil, err
	}
	return requestsOf(s), nil
}

// memory is a process's memory in bytes.
type memory struct {
	RSS       float64 `json:"rssBytes"`
	HeapAlloc float64 `json:"heapAllocBytes"`
}

// memoryNow returns the RSS from /proc and the Go heap from /metrics.
func (r *rerollProcess) memoryNow() (memory, error) {
	s, err := r.scrape()
	if err != nil {
		return memory{}, err
	}
	heap := value(s, "go_memstats_heap_alloc_bytes")
	r.heapPeak = max(r.heapPeak, heap)
	return memory{RSS: value(s, "process_resident_memory_bytes"), HeapAlloc: heap}, nil
}

// peakRSS is the process's high-water mark of resident memory (VmHWM).
func (r *rerollProcess) peakRSS() (float64, error) {
	return procStatus(r.cmd.Process.Pid, "VmHWM")
}

// procStatus reads one "kB" field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no " + field + " in /proc/" + strconv.Itoa(pid) + "/status")
}

func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func sortStrings(s []string) { sort.Strings(s) }

// references are the references of opted-in workloads that Reroll counts
// in reroll_references once it has looked at every workload.
type references struct {
	ConfigMaps int `json:"configMaps"`
	Secrets    int `json:"secrets"`
}

// waitFirstSight waits until Reroll has looked at every workload of the
// profile: reroll_references counts want. Reroll writes no workload on
// first sight (--defer-record, its default: the record waits for the
// first rollout), so its metric, not an annotation the bench could watch,
// says when first sight is over. It scrapes every 100 ms (a scrape costs
// Reroll a little CPU).
func (r *rerollProcess) waitFirstSight(ctx context.Context, want references, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var got references
	for {
		if s, err := r.scrape(); err == nil {
			got = references{}
			for _, x := range s {
				if x.name != "reroll_references" {
					continue
				}
				switch x.labels["source_kind"] {
				case "ConfigMap":
					got.ConfigMaps += int(x.value)
				case "Secret":
					got.Secrets += int(x.value)
				}
			}
			r.heapPeak = max(r.heapPeak, value(s, "go_memstats_heap_alloc_bytes"))
			if got == want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reroll counted %+v references after %s, want %+v: it has not looked at every workload", got, timeout, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
