package metricsauth

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/reroll/reroll/test/controlplane"
	"github.com/reroll/reroll/test/unitonly"
)

// plane is the real control plane (etcd and kube-apiserver: the reviews
// need only the API) shared by the tests that are not in *_unit_test.go
// files; each works in a namespace of its own.
var plane *controlplane.Plane

// admin is a clientset with the plane's admin credentials.
var admin kubernetes.Interface

// unitOnly is -unit: run only the tests of the *_unit_test.go files, which
// need no control plane (`make test-unit`).
var unitOnly = unitonly.Flag()

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if code, ran := unitonly.Main(m, *unitOnly); ran {
		return code
	}
	var err error
	plane, err = controlplane.StartFromRepo(controlplane.Options{Log: os.Stderr}, 3*time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local control plane:", err)
		return 1
	}
	defer func() {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		}
	}()
	if admin, err = kubernetes.NewForConfig(plane.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newT returns a Gomega for t with timeouts that suit a control plane on a
// loaded two-core machine.
func newT(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(120 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	return g
}

// newNamespace creates a namespace for one test and deletes it when the
// test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reroll-metricsauth-"}}, metav1.CreateOptions{})
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
