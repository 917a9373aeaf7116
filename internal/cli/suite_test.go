package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/events"
	"github.com/reroll/reroll/test/controlplane"
	"github.com/reroll/reroll/test/unitonly"
)

// plane is the real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok) shared by every test;
// each test works in a namespace of its own, with Reroll's controller
// running in-process on it and the plugin run as a user runs it.
var plane *controlplane.Plane

// k8s is an uncached admin client.
var k8s client.Client

var scheme = runtime.NewScheme()

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
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
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

// newT returns a Gomega with timeouts for a loaded two-core machine.
func newT(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	g.SetDefaultConsistentlyDuration(3 * time.Second)
	g.SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	return g
}

// newNamespace creates a namespace for one test and deletes it when the
// test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reroll-cli-"}}
	newT(t).Expect(k8s.Create(t.Context(), ns)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// startReroll runs Reroll's controller, as cmd/reroll builds it, on
// namespace ns (or opts.Scope's namespaces, when set) until the test ends; mutate may change the manager's
// options (leader election, metrics). Unlike Reroll as it ships, it runs as
// the plane's admin and with opts as given (safe delivery and the storm
// breaker off unless set): these tests are about what the plugin shows and
// writes, and the plugin runs as the admin too; the chart's RBAC is tested
// in test/e2e. The key is a real one, as cmd/reroll loads.
func startReroll(t *testing.T, ns string, opts controller.Options, mutate func(*ctrl.Options)) {
	t.Helper()
	g := newT(t)
	logs := &syncBuffer{}
	if len(opts.Scope.Namespaces) == 0 {
		opts.Scope.Namespaces = []string{ns}
	}
	// An installation key, as cmd/reroll loads: the records are keyed, and
	// the plugin, which never reads the key, must still answer. A test
	// that signs objects itself (copies of versioned config) gives its own.
	if opts.Key.ID() == "" {
		secret := make([]byte, digest.MinKeyBytes)
		_, _ = rand.Read(secret)
		key, err := digest.NewKey(secret)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		opts.Key = key
	}
	mo := opts.ManagerOptions()
	mo.Scheme = scheme
	mo.Metrics = metricsserver.Options{BindAddress: "0"}
	mo.HealthProbeBindAddress = "0"
	mo.Logger = zap.New(zap.WriteTo(logs), zap.UseDevMode(true))
	mo.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	if mutate != nil {
		mutate(&mo)
	}
	mgr, err := events.NewManager(plane.Config, mo)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), mo.Logger))
	g.Expect(controller.Setup(ctx, mgr, opts)).To(gomega.Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	g.Expect(mgr.GetCache().WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager stopped with an error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop within 30s")
		}
		if t.Failed() {
			t.Logf("Reroll's log:\n%s", logs.String())
		}
	})
}

// kubectlReroll runs the plugin's command line with the plane's admin
// kubeconfig and returns what it printed on standard output. The tests'
// Reroll runs in the test process, with no Deployment to find, and a
// parallel test's Deployment must not be found: --discover=false.
func kubectlReroll(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return kubectlRerollDiscovering(t, append([]string{"--discover=false"}, args...)...)
}

// kubectlRerollDiscovering is kubectlReroll as a user runs it: it finds
// Reroll's Deployment and follows its arguments.
func kubectlRerollDiscovering(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", plane.Kubeconfig, "--cache-dir", filepath.Join(t.TempDir(), "cache")}, args...))
	err := cmd.ExecuteContext(t.Context())
	if errOut.Len() > 0 {
		t.Logf("kubectl reroll %v: standard error:\n%s", args, errOut.String())
	}
	return out.String(), err
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Fixtures.

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	g := newT(t)
	for _, o := range objs {
		g.Expect(k8s.Create(t.Context(), o)).To(gomega.Succeed())
	}
}

func configMap(ns, name string, annotations, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}, Data: data}
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// container returns a container "app" changed by each mutation.
func container(mutate ...func(*corev1.Container)) corev1.Container {
	c := corev1.Container{Name: "app", Image: "registry.example/app:1"}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

// envKey reads key of a ConfigMap (or, with secret, a Secret) into an
// environment variable.
func envKey(kind, name, key string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		src := &corev1.EnvVarSource{}
		if kind == "Secret" {
			src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		} else {
			src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: "V" + fmt.Sprint(len(c.Env)), ValueFrom: src})
	}
}

// envFromConfigMap reads every key of a ConfigMap.
func envFromConfigMap(name string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
}

func labelsFor(name string) map[string]string { return map[string]string{"app": name} }

func deployment(ns, name string, annotations map[string]string, spec corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labelsFor(name)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(name)}, Spec: spec},
		},
	}
}

func statefulSet(ns, name string, annotations map[string]string, spec corev1.PodSpec) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labelsFor(name)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(name)}, Spec: spec},
		},
	}
}

// pod returns a pod spec of the containers.
func pod(containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{Containers: containers}
}

var (
	autoOn         = map[string]string{"reroll.dev/auto": "true"}
	reloaderAutoOn = map[string]string{"reloader.stakater.com/auto": "true"}
)

// recorded waits until Reroll has recorded every object on first sight.
func recorded(t *testing.T, objs ...client.Object) {
	t.Helper()
	g := newT(t)
	for _, o := range objs {
		g.Eventually(func() map[string]string {
			g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(o), o)).To(gomega.Succeed())
			return o.GetAnnotations()
		}).Should(gomega.HaveKey(controller.ObservedAnnotation))
	}
}

// podTemplateAnnotations returns the pod template annotations of a
// Deployment or StatefulSet, read afresh: where Reroll's triggers live.
func podTemplateAnnotations(t *testing.T, obj client.Object) map[string]string {
	t.Helper()
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Template.Annotations
	case *appsv1.StatefulSet:
		return w.Spec.Template.Annotations
	}
	t.Fatalf("no pod template in %T", obj)
	return nil
}
