package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// childEnv makes the test binary, run again with it set, the process whose
// memory TestSampleMax_KeepsThePeakAfterTheMemoryIsReturned samples.
const childEnv = "BENCH_TEST_SAMPLED_CHILD"

// allocated is what the child allocates, touches and then returns to the
// operating system.
const allocated = 64 << 20

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		sampledChild()
		return
	}
	os.Exit(m.Run())
}

// sampledChild touches every page of allocated bytes, says "allocated",
// waits for a line on stdin, returns the pages to the operating system,
// says "freed" and waits to be killed.
func sampledChild() {
	b := make([]byte, allocated)
	for i := range b {
		b[i] = 1
	}
	os.Stdout.WriteString("allocated\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	runtime.KeepAlive(b)
	b = nil
	debug.FreeOSMemory()
	os.Stdout.WriteString("freed\n")
	select {}
}

func TestSampleMax_KeepsThePeakAfterTheMemoryIsReturned(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("the child said %q, want %q (%v)", lines.Text(), want, lines.Err())
		}
	}
	expect("allocated")
	peak := sampleMax(t.Context(), cmd.Process.Pid, "RssAnon", 10*time.Millisecond)
	if got := peak(); got < allocated {
		t.Fatalf("while the child holds %d bytes: peak %.0f", allocated, got)
	}
	if _, err := stdin.Write([]byte("free\n")); err != nil {
		t.Fatal(err)
	}
	expect("freed")
	now, err := procStatus(cmd.Process.Pid, "RssAnon")
	if err != nil {
		t.Fatal(err)
	}
	// The positive control: the memory did go back.
	if now > allocated/2 {
		t.Fatalf("the child still holds %.0f bytes after freeing; the test proves nothing", now)
	}
	if got := peak(); got < allocated {
		t.Errorf("after the child returned its memory (now %.0f bytes): peak %.0f, want at least %d", now, got, allocated)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := peak(); got < allocated {
		t.Errorf("after the child exited: peak %.0f, want at least %d", got, allocated)
	}
}
