// Command controlplane starts and stops the local Kubernetes control plane
// (etcd, kube-apiserver and, with --full, kube-controller-manager,
// kube-scheduler and kwok with a fake Node) from the binaries that
// hack/tools.sh builds into bin/. It backs `make cluster-up` and
// `make cluster-down`, and wraps a command that needs a cluster:
//
//	controlplane up   [--dir .run/cluster] [--full=true]
//	controlplane down [--dir .run/cluster]
//	controlplane run  [--dir DIR] [--full=true] -- CMD ARGS...
//
// up leaves the processes running and prints `export KUBECONFIG=<path>` as
// its last line of standard output; down stops them and removes the folder;
// run starts a plane, runs CMD with KUBECONFIG set, stops the plane when CMD
// ends or on SIGINT or SIGTERM, and exits with CMD's exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/reroll/reroll/test/controlplane"
)

// defaultDir is the state folder of `up` and `down`, relative to the
// repository root.
const defaultDir = ".run/cluster"

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// usage is printed for a missing or unknown subcommand and for --help.
const usage = `usage:
  controlplane up   [--dir .run/cluster] [--full=true]   start a plane that keeps running
  controlplane down [--dir .run/cluster]                  stop it and remove its folder
  controlplane run  [--dir DIR] [--full=true] -- CMD ARGS...
                                                          run CMD against a plane, then stop it
`

// run dispatches to a subcommand and returns the process's exit code.
func run(args []string) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2, nil
	}
	sub, rest := args[0], args[1:]
	flags := pflag.NewFlagSet("controlplane "+sub, pflag.ContinueOnError)
	flags.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	dir := flags.String("dir", "", "state folder: pki, kubeconfigs, etcd data, logs and pids (default "+defaultDir+" in the repository root for up and down, a temporary folder for run)")
	full := new(bool)
	if sub == "up" || sub == "run" {
		full = flags.Bool("full", true, "also run kube-controller-manager, kube-scheduler and kwok with a fake Node, so workloads roll out")
	}
	if err := flags.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0, nil
		}
		return 2, err
	}
	switch sub {
	case "up":
		return up(*dir, *full)
	case "down":
		return down(*dir)
	case "run":
		if flags.ArgsLenAtDash() < 0 || flags.NArg() == 0 {
			return 2, errors.New("run needs a command after --")
		}
		return runCommand(*dir, *full, flags.Args())
	default:
		fmt.Fprint(os.Stderr, usage)
		return 2, fmt.Errorf("unknown subcommand %q", sub)
	}
}

// stateDir returns dir, or the default folder under the repository root.
func stateDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, defaultDir), nil
}

// binaries finds the binaries under the repository root.
func binaries() (controlplane.Binaries, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return controlplane.Binaries{}, err
	}
	return controlplane.BinariesFrom(root)
}

// up starts a detached plane in dir, or reports the one already running.
func up(dir string, full bool) (int, error) {
	dir, err := stateDir(dir)
	if err != nil {
		return 1, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	running, err := controlplane.Running(dir)
	if err != nil {
		return 1, err
	}
	if running {
		fmt.Fprintf(os.Stderr, "control plane already up in %s\n", dir)
		fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
		return 0, nil
	}
	bins, err := binaries()
	if err != nil {
		return 1, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	plane, err := controlplane.Start(ctx, controlplane.Options{
		Binaries: bins, Dir: dir, Full: full, Detach: true, Log: os.Stderr,
	})
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(os.Stderr, "logs in %s; stop with: controlplane down --dir %s\n", filepath.Join(plane.Dir, "logs"), plane.Dir)
	fmt.Printf("export KUBECONFIG=%s\n", plane.Kubeconfig)
	return 0, nil
}

// down stops the plane in dir and removes the folder.
func down(dir string) (int, error) {
	dir, err := stateDir(dir)
	if err != nil {
		return 1, err
	}
	if err := controlplane.StopDir(dir); err != nil {
		return 1, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return 1, fmt.Errorf("remove state folder: %w", err)
	}
	fmt.Fprintf(os.Stderr, "control plane in %s stopped\n", dir)
	return 0, nil
}

// runCommand starts a plane that dies with this process, runs argv with
// KUBECONFIG pointing at it, and stops the plane when argv ends.
func runCommand(dir string, full bool, argv []string) (int, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return 1, fmt.Errorf("resolve %q: %w", dir, err)
		}
		dir = abs
	}
	bins, err := binaries()
	if err != nil {
		return 1, err
	}
	// Signals are caught for the whole run: during Start they cancel it,
	// afterwards they are passed on to the command.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	plane, err := controlplane.Start(ctx, controlplane.Options{Binaries: bins, Dir: dir, Full: full, Log: os.Stderr})
	cancel()
	if err != nil {
		return 1, err
	}
	code, runErr := runChild(argv, plane.Kubeconfig, sigs)
	if err := plane.Stop(); err != nil {
		return 1, errors.Join(runErr, err)
	}
	return code, runErr
}

// runChild runs argv with KUBECONFIG set, forwards SIGINT and SIGTERM to it,
// and returns its exit code (128 plus the signal number when a signal ended
// it, as shells report).
func runChild(argv []string, kubeconfig string, sigs <-chan os.Signal) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("start %s: %w", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return exit.ExitCode(), nil
			}
			if err != nil {
				return 1, fmt.Errorf("run %s: %w", argv[0], err)
			}
			return 0, nil
		}
	}
}
