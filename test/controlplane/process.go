package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// stopGrace is how long a process has to exit after SIGTERM before it is
// sent SIGKILL.
const stopGrace = 5 * time.Second

// logTailLines is how many lines of a process's log an error carries.
const logTailLines = 20

// pidsFile is the file, in the plane's folder, that lists "name pid" per
// line in start order, for StopDir.
const pidsFile = "pids"

// process is one started binary.
type process struct {
	name    string
	pid     int
	logPath string
	// done is closed once the process has exited and been reaped; err then
	// holds what Wait returned.
	done chan struct{}
	err  error
}

// exited reports whether the process has ended.
func (pr *process) exited() bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

// errorf wraps an error about the process with the tail of its log, so a
// failure explains itself without a look into the plane's folder.
func (pr *process) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w\n%s", pr.name, fmt.Errorf(format, args...), logTail(pr.logPath))
}

// exitError returns the error for a process that ended while it should run.
func (pr *process) exitError() error {
	return pr.errorf("exited early: %v", pr.err)
}

// stop sends SIGTERM to the process group and SIGKILL after stopGrace, and
// waits until the process is reaped.
func (pr *process) stop() {
	if pr.exited() {
		return
	}
	// The process leads its own group (Setpgid or Setsid), so a negative pid
	// reaches anything it started too.
	_ = syscall.Kill(-pr.pid, syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pr.pid, syscall.SIGKILL)
		<-pr.done
	}
}

// spawner starts processes from one goroutine locked to its OS thread.
// Pdeathsig fires when the thread that forked the child exits, not when the
// Go process does; a goroutine that never leaves its thread makes the signal
// fire only when the whole process dies.
type spawner struct {
	reqs chan spawnRequest
}

// spawnRequest asks the spawner to start cmd and send the result to errc.
type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

// newSpawner starts the spawner's goroutine; close ends it.
func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnRequest)}
	go func() {
		// Never unlocked: when this goroutine returns, Go ends the thread,
		// which kills the children, so close is called only after they were
		// stopped.
		runtime.LockOSThread()
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// close ends the spawner's goroutine and thread.
func (s *spawner) close() { close(s.reqs) }

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago. All listeners are held open until the last port is chosen, so the
// ports differ from each other; another program may still take one before the
// plane binds it, which the kernel's ephemeral port rotation makes unlikely.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns the last logTailLines lines of the log at path, with a
// header naming the file.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("last %d lines of %s:\n%s", len(lines), path, strings.Join(lines, "\n"))
}

// pidEntry is one line of the pids file.
type pidEntry struct {
	name string
	pid  int
}

// writePids records the processes of a plane, in start order.
func writePids(dir string, procs []*process) error {
	var b strings.Builder
	for _, pr := range procs {
		fmt.Fprintf(&b, "%s %d\n", pr.name, pr.pid)
	}
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write pids file: %w", err)
	}
	return nil
}

// readPids reads the pids file of dir; it returns no entries and no error
// when the file does not exist.
func readPids(dir string) ([]pidEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pids file: %w", err)
	}
	var entries []pidEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("pids file of %s: bad pid %q", dir, fields[1])
		}
		entries = append(entries, pidEntry{name: fields[0], pid: pid})
	}
	return entries, nil
}

// ownedBy reports whether pid is a live process started for the plane in
// dir: every process gets flags that name files in dir, so a pid that the
// system reused for an unrelated program is never signalled.
func ownedBy(pid int, dir string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name; a zombie has ended.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(dir+string(filepath.Separator)))
}

// Running reports whether every process listed in <dir>/pids is alive. It is
// false when the file is missing or empty. It returns an error only when the
// pids file cannot be read or parsed.
func Running(dir string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, fmt.Errorf("resolve %q: %w", dir, err)
	}
	entries, err := readPids(abs)
	if err != nil || len(entries) == 0 {
		return false, err
	}
	for _, e := range entries {
		if !ownedBy(e.pid, abs) {
			return false, nil
		}
	}
	return true, nil
}

// StopDir stops the processes listed in <dir>/pids, last started first: each
// gets SIGTERM and, if it is still alive after five seconds, SIGKILL. It
// skips pids that no longer run or now belong to another program, removes
// the pids file, and returns no error when nothing runs or the file does not
// exist. It serves `make cluster-down` and the clean-up after a crashed run.
func StopDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve %q: %w", dir, err)
	}
	entries, err := readPids(abs)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		if err := stopPid(entries[i], abs); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(abs, pidsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pids file: %w", err)
	}
	return nil
}

// stopPid stops one process that this Go process did not start, so it
// cannot be waited for: it polls /proc until the process is gone.
func stopPid(e pidEntry, dir string) error {
	if !ownedBy(e.pid, dir) {
		return nil
	}
	gone := func(context.Context) (bool, error) { return !ownedBy(e.pid, dir), nil }
	_ = syscall.Kill(-e.pid, syscall.SIGTERM)
	ctx := context.Background()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, stopGrace, true, gone); err == nil {
		return nil
	}
	_ = syscall.Kill(-e.pid, syscall.SIGKILL)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, stopGrace, true, gone); err != nil {
		return fmt.Errorf("stop %s (pid %d): still running after SIGKILL: %w", e.name, e.pid, err)
	}
	return nil
}
