package cli

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runPlugin runs `kubectl reroll args...` as the process would (Run: exit
// status, errors on standard error) with the kubeconfig at kubeconfig.
func runPlugin(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	// --discover=false: a parallel test's Reroll Deployment must not be
	// found (kubectlReroll says why).
	code = Run(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--discover=false"}, args...),
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

// closedPortKubeconfig writes a kubeconfig whose server is a port of this
// machine that nothing listens on, and returns its path and the server.
func closedPortKubeconfig(t *testing.T) (string, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: closed
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: someone
  user: {token: not-a-real-token}
contexts:
- name: closed
  context: {cluster: closed, user: someone, namespace: default}
current-context: closed
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, server
}

// planFile writes one ConfigMap manifest into a new directory.
func planFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPlugin_ExitsNonZeroWhenTheAPIServerCannotBeReached(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	dir := planFile(t)
	commands := map[string]struct {
		// args are the command's.
		args []string
		// code is its exit status when the server cannot be reached.
		code int
	}{
		"status":                    {args: []string{"status", "--reroll-namespace", ns}, code: 1},
		"who-uses":                  {args: []string{"who-uses", "configmap/cfg"}, code: 1},
		"why":                       {args: []string{"why", "deployment/web"}, code: 1},
		"plan":                      {args: []string{"plan", "-f", dir}, code: 1},
		"plan --fail-on-rollout":    {args: []string{"plan", "-f", dir, "--fail-on-rollout"}, code: 2},
		"status -o json, no output": {args: []string{"status", "--reroll-namespace", ns, "-o", "json"}, code: 1},
	}
	closed, server := closedPortKubeconfig(t)
	for name, c := range commands {
		t.Run(name, func(t *testing.T) {
			g := newT(t)
			// Positive control: against the running API server the same
			// command succeeds (why: a missing workload is an error of its
			// own, so it is left out here).
			if c.args[0] != "why" {
				_, stderr, code := runPlugin(t, plane.Kubeconfig, append([]string{"-n", ns}, c.args...)...)
				g.Expect(code).To(gomega.Equal(0), stderr)
			}
			stdout, stderr, code := runPlugin(t, closed, append([]string{"-n", ns}, c.args...)...)
			g.Expect(code).To(gomega.Equal(c.code))
			g.Expect(stderr).To(gomega.HavePrefix("error: cannot reach the API server at " + server + ": "))
			g.Expect(stderr).To(gomega.ContainSubstring("connection refused"))
			g.Expect(stdout).To(gomega.BeEmpty())
		})
	}
	_ = g
}

func TestPlugin_ExitsNonZeroWhenAccessIsDenied(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	whoUsesFixture(t, ns)
	dir := planFile(t)
	for _, args := range [][]string{
		{"status", "--reroll-namespace", ns},
		{"who-uses", "configmap/cfg"},
		{"plan", "-f", dir},
	} {
		// Positive control: the admin reads what the command needs.
		stdout, stderr, code := runPlugin(t, plane.Kubeconfig, append([]string{"-n", ns}, args...)...)
		g.Expect(code).To(gomega.Equal(0), stderr)
		g.Expect(stdout).NotTo(gomega.BeEmpty())

		// A user bound to no role: every read is forbidden.
		stdout, stderr, code = runPlugin(t, plane.Kubeconfig, append([]string{"--as", "nobody", "-n", ns}, args...)...)
		g.Expect(code).To(gomega.Equal(1), "%v: %s", args, stdout)
		g.Expect(stderr).To(gomega.HavePrefix("error: access denied: the API server forbade every read (the first: GET /"), "%v", args)
		g.Expect(stdout).To(gomega.BeEmpty())
	}
	// why reads one workload: a forbidden get is its error.
	_, stderr, code := runPlugin(t, plane.Kubeconfig, "--as", "nobody", "-n", ns, "why", "deployment/env")
	g.Expect(code).To(gomega.Equal(1))
	g.Expect(stderr).To(gomega.ContainSubstring("forbidden"))
	// And with --fail-on-rollout, a denied plan is plan failing: 2.
	_, stderr, code = runPlugin(t, plane.Kubeconfig, "--as", "nobody", "-n", ns, "plan", "-f", dir, "--fail-on-rollout")
	g.Expect(code).To(gomega.Equal(2))
	g.Expect(stderr).To(gomega.HavePrefix("error: access denied"))
}

func TestPlugin_OutputNameListsTheObjects(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	whoUsesFixture(t, ns)

	// who-uses: every consumer, as kubectl get -o name prints them.
	stdout, stderr, code := runPlugin(t, plane.Kubeconfig, "-n", ns, "who-uses", "configmap/cfg", "-o", "name")
	g.Expect(code).To(gomega.Equal(0), stderr)
	g.Expect(strings.Split(strings.TrimSpace(stdout), "\n")).To(gomega.ConsistOf(
		"deployment.apps/env", "deployment.apps/files", "deployment.apps/listed", "deployment.apps/quiet"))
	stdout, _, code = runPlugin(t, plane.Kubeconfig, "-n", ns, "who-uses", "secret/sec", "-o", "name")
	g.Expect(code).To(gomega.Equal(0))
	g.Expect(stdout).To(gomega.Equal("deployment.apps/env\n"))

	// why: the workload.
	stdout, _, code = runPlugin(t, plane.Kubeconfig, "-n", ns, "why", "deploy/files", "-o", "name")
	g.Expect(code).To(gomega.Equal(0))
	g.Expect(stdout).To(gomega.Equal("deployment.apps/files\n"))

	// plan: only what would roll. a changes: env reads it (rolls), files
	// mounts every key (rolls), listed names cfg (rolls); quiet is not
	// opted in.
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"2\"\n  b: \"1\"\n  c: \"1\"\n"), 0o600)).To(gomega.Succeed())
	stdout, _, code = runPlugin(t, plane.Kubeconfig, "-n", ns, "plan", "-f", dir, "-o", "name")
	g.Expect(code).To(gomega.Equal(0))
	g.Expect(strings.Split(strings.TrimSpace(stdout), "\n")).To(gomega.ConsistOf(
		"deployment.apps/env", "deployment.apps/files", "deployment.apps/listed"))

	// version has no objects to name.
	_, stderr, code = runPlugin(t, plane.Kubeconfig, "version", "-o", "name")
	g.Expect(code).To(gomega.Equal(1))
	g.Expect(stderr).To(gomega.ContainSubstring("not -o name"))
}

func TestPlugin_Version(t *testing.T) {
	t.Parallel()
	g := newT(t)
	// The test binary has no linker values; the line still has each part.
	stdout, _, code := runPlugin(t, plane.Kubeconfig, "version", "--client")
	g.Expect(code).To(gomega.Equal(0))
	g.Expect(stdout).To(gomega.MatchRegexp(`^Client: kubectl-reroll \S+ \(commit \S+, built \S+, go\S+, \w+/\w+\)\n$`))
	stdout, _, code = runPlugin(t, plane.Kubeconfig, "version", "-o", "json")
	g.Expect(code).To(gomega.Equal(0))
	g.Expect(stdout).To(gomega.ContainSubstring(`"kind": "Version"`))
	g.Expect(stdout).To(gomega.ContainSubstring(`"goVersion": "go`))
}
