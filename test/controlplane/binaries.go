package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// modulePath is the module that RepoRoot looks for in go.mod files.
const modulePath = "github.com/reroll/reroll"

// versionsFile is where hack/tools.sh and BinariesFrom read the versions of
// the binaries, relative to the repository root.
const versionsFile = "hack/tools/versions.env"

// Binaries holds absolute paths of the binaries.
type Binaries struct {
	// Etcd is the path of etcd.
	Etcd string
	// KubeAPIServer is the path of kube-apiserver.
	KubeAPIServer string
	// KubeControllerManager is the path of kube-controller-manager.
	KubeControllerManager string
	// KubeScheduler is the path of kube-scheduler.
	KubeScheduler string
	// Kwok is the path of kwok.
	Kwok string
}

// BinariesFrom reads <repoRoot>/hack/tools/versions.env and returns the paths
// of the binaries under <repoRoot>/bin, in the layout hack/tools.sh builds:
// bin/etcd-<ETCD_VERSION>/etcd, bin/kube-<KUBE_VERSION>/kube-apiserver (and
// the controller-manager and scheduler next to it), bin/kwok-<KWOK_VERSION>/kwok.
// It returns an error when the versions file cannot be read or lacks a
// version, and an error naming the first missing binary, telling the user to
// run `make tools`, when a binary is not there.
func BinariesFrom(repoRoot string) (Binaries, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return Binaries{}, fmt.Errorf("resolve repository root %q: %w", repoRoot, err)
	}
	versions, err := readVersions(filepath.Join(root, versionsFile))
	if err != nil {
		return Binaries{}, err
	}
	dir := func(key, tool string) (string, error) {
		v := versions[key]
		if v == "" {
			return "", fmt.Errorf("%s does not set %s", filepath.Join(root, versionsFile), key)
		}
		return filepath.Join(root, "bin", tool+"-"+v), nil
	}
	etcdDir, err := dir("ETCD_VERSION", "etcd")
	if err != nil {
		return Binaries{}, err
	}
	kubeDir, err := dir("KUBE_VERSION", "kube")
	if err != nil {
		return Binaries{}, err
	}
	kwokDir, err := dir("KWOK_VERSION", "kwok")
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{
		Etcd:                  filepath.Join(etcdDir, "etcd"),
		KubeAPIServer:         filepath.Join(kubeDir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(kubeDir, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(kubeDir, "kube-scheduler"),
		Kwok:                  filepath.Join(kwokDir, "kwok"),
	}
	for _, p := range []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Kwok} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return Binaries{}, fmt.Errorf("%s is missing: run `make tools` to build the control plane's binaries", p)
		}
		if err != nil {
			return Binaries{}, fmt.Errorf("check binary: %w", err)
		}
		if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("%s is not an executable file: run `make tools` to rebuild it", p)
		}
	}
	return b, nil
}

// readVersions parses KEY=VALUE lines, skipping blank lines and # comments,
// the subset of shell that hack/tools.sh sources.
func readVersions(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tool versions: %w", err)
	}
	versions := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE, got %q", path, n, line)
		}
		versions[strings.TrimSpace(key)] = strings.Trim(strings.TrimSpace(value), `"'`)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tool versions: %w", err)
	}
	return versions, nil
}

// RepoRoot walks up from the working directory to the directory holding the
// go.mod of module github.com/reroll/reroll, so tests in any package and
// commands run from any subfolder find bin/ and hack/. It returns an error
// when no such directory is above the working directory.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for dir := wd; ; {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or above", modulePath, wd)
		}
		dir = parent
	}
}

// isModuleRoot reports whether the go.mod at path declares modulePath. The
// wrapper modules under hack/tools have their own go.mod and are skipped.
func isModuleRoot(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}

// StartFromRepo starts a control plane from the binaries of the repository
// this process runs in (RepoRoot, BinariesFrom; opts.Binaries is filled in),
// waiting at most timeout for it to be ready. It returns the plane, and an
// error naming what is missing (a binary: run `make tools`) or what failed
// to start. The test suites' TestMain use it.
func StartFromRepo(opts Options, timeout time.Duration) (*Plane, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if opts.Binaries, err = BinariesFrom(root); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return Start(ctx, opts)
}
