package state

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/test/controlplane"
)

// plane is the real control plane shared by every test of the package;
// each test works in a namespace of its own. It is the full plane: a
// deleted namespace must go away (the Job journal's tests reuse a name).
var plane *controlplane.Plane

// k8s is an uncached admin client: what a user's kubectl sees.
var k8s client.Client

var scheme = runtime.NewScheme()

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var err error
	plane, err = controlplane.StartFromRepo(controlplane.Options{Full: true, Log: os.Stderr}, 3*time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local control plane:", err)
		return 1
	}
	defer func() {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		}
	}()
	if k8s, err = client.New(plane.Config, client.Options{Scheme: scheme}); err != nil {
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reroll-state-"}}
	newT(t).Expect(k8s.Create(t.Context(), ns)).To(gomega.Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), ns)
	})
	return ns.Name
}

// testKey returns the installation key of b repeated.
func testKey(t *testing.T, b byte) digest.Key {
	t.Helper()
	k, err := digest.NewKey(bytes.Repeat([]byte{b}, digest.MinKeyBytes))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return k
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	g := newT(t)
	for _, o := range objs {
		g.Expect(k8s.Create(t.Context(), o)).To(gomega.Succeed())
	}
}

// get reads obj afresh from the API server.
func get[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
	return obj
}

// podSpec is a pod spec of one container, changed by mutate.
func podSpec(mutate ...func(*corev1.PodSpec)) corev1.PodSpec {
	s := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return b
}
