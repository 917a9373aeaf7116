package projection

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/digest"
	rerollevents "github.com/reroll/reroll/internal/events"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/scope"
	"github.com/reroll/reroll/internal/store"
	"github.com/reroll/reroll/test/controlplane"
	"github.com/reroll/reroll/test/unitonly"
)

// plane is the real control plane (etcd and kube-apiserver) shared by every
// test of the package; each test works in a namespace of its own.
var plane *controlplane.Plane

// k8s is an uncached admin client: what a user's kubectl sees.
var k8s client.Client

// rerollConfig authenticates as the ServiceAccount reroll-system/reroll,
// bound to the ClusterRole that `make manifests` generates
// (config/rbac/role.yaml): Reroll's real rights, impersonate included and
// no access to widgets.
var rerollConfig *rest.Config

var scheme = runtime.NewScheme()

// widgetGVK is the custom resource the tests project into, shaped like
// goharbor's HarborCluster S3 storage.
var widgetGVK = schema.GroupVersionKind{Group: "test.reroll.dev", Version: "v1", Kind: "Widget"}

// unitOnly is -unit: run only the tests of the *_unit_test.go files, which
// need no control plane (`make test-unit`).
var unitOnly = unitonly.Flag()

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzzing runs only the fuzz targets, which need no control plane.
		return m.Run()
	}
	if code, ran := unitonly.Main(m, *unitOnly); ran {
		return code
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, rerollv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
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
	if k8s, err = client.New(plane.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setUp(ctx, root); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the cluster:", err)
		return 1
	}
	return m.Run()
}

// setUp installs the Projection CRD from config/crd and the Widget CRD,
// and creates Reroll's ServiceAccount with the generated role.
func setUp(ctx context.Context, root string) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := readYAML(filepath.Join(root, "config", "crd", "bases", "reroll.dev_projections.yaml"), &crd); err != nil {
		return err
	}
	widgets := widgetCRD()
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{&crd, widgets} {
		if err := k8s.Create(ctx, c); err != nil {
			return fmt.Errorf("creating CRD %s: %w", c.Name, err)
		}
		if err := waitEstablished(ctx, c.Name); err != nil {
			return err
		}
	}
	var role rbacv1.ClusterRole
	if err := readYAML(filepath.Join(root, "config", "rbac", "role.yaml"), &role); err != nil {
		return err
	}
	role.Name = "reroll-test"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reroll-system"}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "reroll"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reroll-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns.Name}},
	}
	for _, o := range []client.Object{ns, sa, &role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(plane.Config)
	if err != nil {
		return err
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating a token for reroll: %w", err)
	}
	rerollConfig = rest.AnonymousClientConfig(plane.Config)
	rerollConfig.BearerToken = tok.Status.Token
	rerollConfig.QPS, rerollConfig.Burst = 200, 400
	return nil
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

func waitEstablished(ctx context.Context, name string) error {
	for {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, cur); err == nil {
			for _, c := range cur.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// widgetCRD is a namespaced custom resource with a free-form spec.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.reroll.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: widgetGVK.Kind, ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgetGVK.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// newT returns a Gomega for t with timeouts that suit a control plane on a
// loaded two-core machine.
func newT(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	g.SetDefaultConsistentlyDuration(3 * time.Second)
	g.SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	return g
}

// newNamespace creates a namespace for one test and deletes it when the
// test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "projection-test-"}}
	newT(t).Expect(k8s.Create(t.Context(), ns)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// serviceAccount creates the ServiceAccount name in ns, bound to a Role
// with rules: the identity a Projection names.
func serviceAccount(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	create(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		})
}

// Rules of a ServiceAccount that may project Secrets and ConfigMaps into
// widgets.
var (
	readSources  = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get"}}
	writeWidgets = rbacv1.PolicyRule{APIGroups: []string{widgetGVK.Group}, Resources: []string{"widgets"}, Verbs: []string{"get", "patch"}}
)

// testKey is the digest key the tests' controller uses.
var runKey = []byte("key-of-the-projection-tests-32-bytes")

// run is one run of the controller, as Reroll, scoped to one namespace.
type run struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	logs   *syncBuffer
	// cache is the manager's informer cache, to check what it holds.
	cache cache.Cache
	// store is the ConfigMap and Secret store the controller watches.
	store *store.Store
}

// startProjections runs a manager with the Projection controller as
// cmd/reroll builds it (the digest cache transform included), as Reroll's
// ServiceAccount, watching namespace ns, until the test ends or stop.
// mutate, when given, changes the manager's options; with a webhook server
// set, the admission handler of projected fields is served on it.
func startProjections(t *testing.T, ns string, opts Options, mutate ...func(*ctrl.Options)) *run {
	t.Helper()
	g := newT(t)
	logs := &syncBuffer{}
	if opts.Key == nil {
		opts.Key = runKey
	}
	mo := scope.Scope{Namespaces: []string{ns}}.ManagerOptions()
	mo.Scheme = scheme
	mo.Metrics = metricsserver.Options{BindAddress: "0"}
	mo.HealthProbeBindAddress = "0"
	mo.Logger = zap.New(zap.WriteTo(logs), zap.UseDevMode(true))
	mo.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	for _, m := range mutate {
		m(&mo)
	}
	// As cmd/reroll does: Reroll's Event recorder.
	mgr, err := rerollevents.NewManager(rerollConfig, mo)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// As cmd/reroll does: the store of the namespace, shared.
	key, err := digest.NewKey(opts.Key)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	opts.Store, err = store.New(rerollConfig, store.Options{Kinds: []reference.Kind{reference.ConfigMap, reference.Secret}, Namespaces: []string{ns}, Key: key})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(mgr.Add(opts.Store)).To(gomega.Succeed())
	g.Expect(Setup(mgr, opts, prometheus.NewRegistry())).To(gomega.Succeed())
	if mo.WebhookServer != nil {
		RegisterWebhook(mgr)
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), mo.Logger))
	r := &run{cancel: cancel, done: make(chan error, 1), logs: logs, cache: mgr.GetCache(), store: opts.Store}
	go func() { r.done <- mgr.Start(ctx) }()
	g.Expect(mgr.GetCache().WaitForCacheSync(t.Context())).To(gomega.BeTrue())
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("the controller's log:\n%s", logs.String())
		}
	})
	return r
}

// stop ends the run and waits for the manager to return.
func (r *run) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("manager stopped with an error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop within 30s")
		}
	})
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

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// setSecretKey writes one key of a Secret, retrying on conflict.
func setSecretKey(t *testing.T, ns, name, key, value string) {
	t.Helper()
	g := newT(t)
	g.Eventually(func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		s.Data[key] = []byte(value)
		return k8s.Update(t.Context(), s)
	}).Should(gomega.Succeed())
}

// widget returns a Widget with spec.
func widget(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(widgetGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// getWidget reads the Widget afresh.
func getWidget(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u)).To(gomega.Succeed())
	return u
}

// field returns the string at a spec.fields[].path in obj ("" when absent).
func field(t *testing.T, obj *unstructured.Unstructured, path string) string {
	t.Helper()
	names, err := ParsePath(path)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	v, _ := valueAt(obj.Object, names)
	return v
}

// projection returns a Projection of widget target in ns as sa.
func projection(ns, name, sa, target string, sources []rerollv1alpha1.Source, fields ...rerollv1alpha1.Field) *rerollv1alpha1.Projection {
	return &rerollv1alpha1.Projection{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rerollv1alpha1.ProjectionSpec{
			ServiceAccountName: sa,
			Sources:            sources,
			Target:             rerollv1alpha1.Target{APIVersion: widgetGVK.GroupVersion().String(), Kind: widgetGVK.Kind, Name: target},
			Fields:             fields,
		},
	}
}

func secretKey(name, secret, key string) rerollv1alpha1.Source {
	return rerollv1alpha1.Source{Name: name, SecretKeyRef: &rerollv1alpha1.KeySelector{Name: secret, Key: key}}
}

func configMapKey(name, configMap, key string) rerollv1alpha1.Source {
	return rerollv1alpha1.Source{Name: name, ConfigMapKeyRef: &rerollv1alpha1.KeySelector{Name: configMap, Key: key}}
}

// condition returns the Projection's condition of type (zero when absent).
func condition(t *testing.T, ns, name, typ string) metav1.Condition {
	t.Helper()
	p := &rerollv1alpha1.Projection{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Fatalf("reading Projection %s: %v", name, err)
		}
		return metav1.Condition{}
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// getProjection reads the Projection afresh.
func getProjection(t *testing.T, ns, name string) *rerollv1alpha1.Projection {
	t.Helper()
	p := &rerollv1alpha1.Projection{}
	newT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p)).To(gomega.Succeed())
	return p
}

// events returns the messages of the Events with reason on the named
// object, one per occurrence.
func events(t *testing.T, ns, kind, name, reason string) []string {
	t.Helper()
	var list corev1.EventList
	newT(t).Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name || e.Reason != reason {
			continue
		}
		for range max(e.Count, 1) {
			out = append(out, e.Message)
		}
	}
	return out
}
