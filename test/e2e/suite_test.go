//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/reroll/reroll/test/controlplane"
)

// The environment every test shares, set up once by TestMain.
var (
	// root is the repository root.
	root string
	// plane is the local control plane: etcd, kube-apiserver,
	// kube-controller-manager, kube-scheduler and kwok.
	plane *controlplane.Plane
	// k8s and clientset are admin clients: what a cluster admin's kubectl sees.
	k8s       client.Client
	clientset kubernetes.Interface
	// The binaries: reroll built from this tree, helm, kubectl and
	// controller-gen from bin/ (`make tools`, hack/tools.sh).
	rerollBin, helmBin, kubectlBin, controllerGenBin, helmDocsBin string
	// helmEnv keeps helm's cache and configuration out of $HOME.
	helmEnv []string
	// tmp holds the built binary and helm's folders; removed at the end.
	tmp string
	// kubeVersion is the local control plane's Kubernetes version
	// ("v1.32.4"), which `helm template` and `helm lint` are given.
	kubeVersion string
)

var scheme = runtime.NewScheme()

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	defer func() {
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
	}()
	defer func() {
		if plane == nil {
			return
		}
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		}
	}()
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return 1
	}
	return m.Run()
}

func setup() error {
	var err error
	if err = clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if root, err = controlplane.RepoRoot(); err != nil {
		return err
	}
	if tmp, err = os.MkdirTemp("", "reroll-e2e-"); err != nil {
		return err
	}
	// Built here, not into bin/, which other checkouts may share.
	rerollBin = filepath.Join(tmp, "reroll")
	build := exec.Command("go", "build", "-o", rerollBin, "./cmd/reroll")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/reroll: %w\n%s", err, out)
	}
	tools := map[string]*string{"helm": &helmBin, "kube": &kubectlBin, "controller-gen": &controllerGenBin, "helm-docs": &helmDocsBin}
	for tool, path := range tools {
		out, err := exec.Command(filepath.Join(root, "hack/tools.sh"), "--dir", tool).Output()
		if err != nil {
			return fmt.Errorf("hack/tools.sh --dir %s: %w", tool, err)
		}
		name := tool
		if tool == "kube" {
			name = "kubectl"
		}
		*path = filepath.Join(strings.TrimSpace(string(out)), name)
		if _, err := os.Stat(*path); err != nil {
			return fmt.Errorf("%s is missing: run `make test-e2e`, which builds it (hack/tools.sh %s)", *path, tool)
		}
	}
	helmEnv = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "helm/cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tmp, "helm/config"),
		"HELM_DATA_HOME="+filepath.Join(tmp, "helm/data"),
	)

	bins, err := controlplane.BinariesFrom(root)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if plane, err = controlplane.Start(ctx, controlplane.Options{Binaries: bins, Full: true, Log: os.Stderr}); err != nil {
		return fmt.Errorf("starting the local control plane: %w", err)
	}
	if k8s, err = client.New(plane.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(plane.Config); err != nil {
		return err
	}
	v, err := clientset.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the control plane's version: %w", err)
	}
	kubeVersion = v.GitVersion
	return nil
}

// newT returns a Gomega for t with timeouts that suit a control plane on a
// loaded two-core machine.
func newT(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	g.SetDefaultConsistentlyDuration(2 * time.Second)
	g.SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	return g
}
