package store

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/test/controlplane"
)

// plane is the real control plane (etcd and kube-apiserver) of the
// package's tests; each test works in namespaces of its own.
var plane *controlplane.Plane

var k8s kubernetes.Interface

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
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
	if k8s, err = kubernetes.NewForConfig(plane.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newNamespace creates a namespace named after the test and a suffix.
func newNamespace(t *testing.T, g *gomega.WithT, suffix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-" + suffix + "-"}}
	ns, err := k8s.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return ns.Name
}

// start runs st until the test ends and waits for it to sync.
func start(t *testing.T, g *gomega.WithT, st *Store) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = st.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	g.Expect(st.WaitForSync(syncCtx)).To(gomega.Succeed())
	return ctx
}

func secret(ns, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestStore_HoldsDigestsOfEveryKeyAndNoValue(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g, "digests")
	key, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s := secret(ns, "db", map[string][]byte{"password": []byte("s3cr3t"), "user": []byte("admin")})
	s.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
	s.Labels = map[string]string{"app": "db"}
	created, err := k8s.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = k8s.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"},
		Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0xff}}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	st, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.ConfigMap, reference.Secret}, Key: key})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	start(t, g, st)

	obj, ok, err := st.Get(ctx, reference.Secret, ns, "db")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(obj.GetUID()).To(gomega.Equal(created.UID))
	g.Expect(obj.GetResourceVersion()).To(gomega.Equal(created.ResourceVersion))
	g.Expect(obj.GetAnnotations()).To(gomega.Equal(map[string]string{"reloader.stakater.com/match": "true"}))
	g.Expect(obj.Data()).To(gomega.Equal(digest.Data{
		Keys:         map[string]string{"password": key.Digest("Secret", ns, "db", "password", []byte("s3cr3t")), "user": key.Digest("Secret", ns, "db", "user", []byte("admin"))},
		ReloaderSHA1: digest.ReloaderSHA1OfSecret(s.Data),
	}))
	g.Expect(fmt.Sprintf("%#v", obj)).NotTo(gomega.ContainSubstring("s3cr3t"))

	cm, ok, err := st.Get(ctx, reference.ConfigMap, ns, "cfg")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(cm.Data().Keys).To(gomega.Equal(map[string]string{"a": key.Digest("ConfigMap", ns, "cfg", "a", []byte("1")), "b": key.Digest("ConfigMap", ns, "cfg", "b", []byte{0xff})}))

	names, err := st.Names(ctx, reference.Secret, ns)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(names).To(gomega.Equal([]string{"db"}))

	// Positive first: the object above is found; a missing one is not, and
	// is no error.
	_, ok, err = st.Get(ctx, reference.Secret, ns, "missing")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.BeFalse())
}

func TestStore_KeepsToItsScope(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	in, out := newNamespace(t, g, "in"), newNamespace(t, g, "out")
	for _, ns := range []string{in, out} {
		for name, lbl := range map[string]string{"selected": "yes", "unselected": "no"} {
			s := secret(ns, name, map[string][]byte{"k": []byte(name)})
			s.Labels = map[string]string{"reroll-test": lbl}
			_, err := k8s.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
	}
	sel, err := labels.Parse("reroll-test=yes")
	g.Expect(err).NotTo(gomega.HaveOccurred())

	t.Run("namespaces", func(t *testing.T) {
		g := gomega.NewWithT(t)
		st, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.Secret}, Namespaces: []string{in}, LabelSelector: sel})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		start(t, g, st)
		_, ok, err := st.Get(ctx, reference.Secret, in, "selected")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeTrue())
		_, ok, err = st.Get(ctx, reference.Secret, in, "unselected")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeFalse(), "the label selector is applied")
		_, _, err = st.Get(ctx, reference.Secret, out, "selected")
		g.Expect(err).To(gomega.MatchError(ErrNotWatched))
		_, _, err = st.Get(ctx, reference.ConfigMap, in, "selected")
		g.Expect(err).To(gomega.MatchError(ErrNotWatched))
		_, err = st.Source(reference.ConfigMap, &handler.Funcs{})
		g.Expect(err).To(gomega.MatchError(ErrNotWatched))
	})
	t.Run("ignored namespaces", func(t *testing.T) {
		g := gomega.NewWithT(t)
		st, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.Secret}, IgnoredNamespaces: []string{out}})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		start(t, g, st)
		names, err := st.Names(ctx, reference.Secret, in)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(names).To(gomega.Equal([]string{"selected", "unselected"}))
		names, err = st.Names(ctx, reference.Secret, out)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(names).To(gomega.BeEmpty(), "the ignored namespace is not watched")
	})
	t.Run("refuses other kinds", func(t *testing.T) {
		_, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.SecretProviderClass}})
		gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("not SecretProviderClass")))
	})
}

// recorder is a controller-runtime event handler that keeps the updates it
// is given.
type recorder struct {
	mu      sync.Mutex
	updates []event.UpdateEvent
}

func (r *recorder) handler() handler.EventHandler {
	return handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.updates = append(r.updates, e)
	}}
}

func (r *recorder) all() []event.UpdateEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.UpdateEvent(nil), r.updates...)
}

func TestStore_SourceTellsWhichKeysChanged(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g, "source")
	_, err := k8s.CoreV1().Secrets(ns).Create(ctx, secret(ns, "s", map[string][]byte{"a": []byte("1"), "b": []byte("2")}), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	st, err := New(plane.Config, Options{Kinds: []reference.Kind{reference.Secret}, Namespaces: []string{ns}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	runCtx := start(t, g, st)
	var rec recorder
	// What is tested here is that Source hands every event to the predicates
	// it was given and the handler only what they pass; this stand-in drops
	// updates whose data digests are equal and counts what it saw. Reroll's
	// own predicate (the controller's relevantChange) is tested with the
	// controller: workload_nochange_test.go, workload_scale_test.go.
	var seen atomic.Int32
	dataChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		seen.Add(1)
		before, _ := digest.Of(e.ObjectOld)
		after, _ := digest.Of(e.ObjectNew)
		return before.ReloaderSHA1 != after.ReloaderSHA1
	}}
	src, err := st.Source(reference.Secret, rec.handler(), dataChanged)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	g.Expect(src.Start(runCtx, q)).To(gomega.Succeed())
	g.Expect(src.WaitForSync(runCtx)).To(gomega.Succeed())

	s, err := k8s.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s.Labels = map[string]string{"only": "labels"}
	_, err = k8s.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s, err = k8s.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s.Data["b"] = []byte("3")
	_, err = k8s.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	// Both updates reached the predicate (in order: one informer per
	// object), and the handler got only the data change.
	g.Eventually(seen.Load).WithTimeout(30 * time.Second).Should(gomega.BeEquivalentTo(2))
	g.Eventually(rec.all).WithTimeout(30 * time.Second).Should(gomega.HaveLen(1))
	e := rec.all()[0]
	before, ok1 := digest.Of(e.ObjectOld)
	after, ok2 := digest.Of(e.ObjectNew)
	g.Expect(ok1 && ok2).To(gomega.BeTrue(), "the events carry digest.Objects")
	g.Expect(before.Keys["a"]).To(gomega.Equal(after.Keys["a"]))
	g.Expect(before.Keys["b"]).NotTo(gomega.Equal(after.Keys["b"]))
	g.Expect(after.Keys["b"]).To(gomega.Equal(digest.Value([]byte("3"))))
	// The label-only update came first and was dropped: one event only.
	g.Expect(rec.all()).To(gomega.HaveLen(1))
}
