package controlplane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestStart_FullPlaneRollsOutDeployment starts a full plane and checks what a
// user of it relies on: a Deployment's pods are scheduled onto the fake Node
// and reported ready, and Stop leaves no process behind.
func TestStart_FullPlaneRollsOutDeployment(t *testing.T) {
	g := NewWithT(t)
	root, err := RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bins, err := BinariesFrom(root)
	g.Expect(err).NotTo(HaveOccurred())

	plane, err := Start(t.Context(), Options{Binaries: bins, Full: true, Log: testWriter{t}})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = plane.Stop()
		}
	})
	g.Expect(plane.Kubeconfig).To(BeARegularFile())

	client, err := kubernetes.NewForConfig(plane.Config)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "rollout-"},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	labels := map[string]string{"app": "demo"}
	_, err = client.AppsV1().Deployments(ns.Name).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "fake"}},
				},
			},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		d, err := client.AppsV1().Deployments(ns.Name).Get(ctx, "demo", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(2))
		g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(2))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	pods, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, pod := range pods.Items {
		g.Expect(pod.Spec.NodeName).To(Equal(NodeName))
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	}

	// The fake Node's heartbeat: kwok renews its Lease, as a kubelet does.
	// Without it the node lifecycle controller finds the Node stale every
	// grace period and marks every pod on it Ready=False for good; the
	// Lease is renewed at least once more while the test watches it.
	var firstRenew time.Time
	g.Eventually(func(g Gomega) {
		lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, NodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		firstRenew = lease.Spec.RenewTime.Time
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	g.Eventually(func(g Gomega) {
		lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, NodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", firstRenew))
	}).WithTimeout(2 * time.Minute).Should(Succeed())

	pids := plane.PIDs()
	g.Expect(pids).To(HaveKey("etcd"))
	g.Expect(pids).To(HaveKey("kube-apiserver"))
	g.Expect(pids).To(HaveKey("kube-controller-manager"))
	g.Expect(pids).To(HaveKey("kube-scheduler"))
	g.Expect(pids).To(HaveKey("kwok"))

	g.Expect(plane.Stop()).To(Succeed())
	stopped = true
	for name, pid := range pids {
		// Stop reaps its children, so the pid is gone rather than a zombie.
		g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "%s (pid %d) still exists", name, pid)
	}
	g.Expect(plane.Dir).NotTo(BeADirectory(), "Stop removes the temporary state folder")
}

// TestStart_FailureNamesProcessAndLogTail checks that when a process dies
// during start, the error says which one and shows the end of its log, and
// that the processes already started are stopped.
func TestStart_FailureNamesProcessAndLogTail(t *testing.T) {
	g := NewWithT(t)
	root, err := RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bins, err := BinariesFrom(root)
	g.Expect(err).NotTo(HaveOccurred())
	broken := filepath.Join(t.TempDir(), "kube-apiserver")
	g.Expect(os.WriteFile(broken, []byte("#!/bin/sh\necho 'E0101 flag provided but not defined'\nexit 1\n"), 0o755)).To(Succeed())
	bins.KubeAPIServer = broken
	dir := t.TempDir()

	_, err = Start(t.Context(), Options{Binaries: bins, Dir: dir})
	t.Log(err)
	g.Expect(err).To(MatchError(ContainSubstring("kube-apiserver: exited early")))
	g.Expect(err).To(MatchError(ContainSubstring("E0101 flag provided but not defined")))
	g.Expect(err).To(MatchError(ContainSubstring(filepath.Join(dir, "logs", "kube-apiserver.log"))))
	g.Expect(filepath.Join(dir, pidsFile)).NotTo(BeAnExistingFile(), "the etcd that did start is stopped")
}

// TestStart_RestartsKwokThatDiesWhileWarmingUp plays kwok's crash while it
// sets up its stages: a kwok that panics on its first start. Start must start
// it again, return a plane whose Node is Ready, and keep only the live kwok
// in its pids.
func TestStart_RestartsKwokThatDiesWhileWarmingUp(t *testing.T) {
	g := NewWithT(t)
	root, err := RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bins, err := BinariesFrom(root)
	g.Expect(err).NotTo(HaveOccurred())
	tmp := t.TempDir()
	crashed := filepath.Join(tmp, "crashed")
	flaky := filepath.Join(tmp, "kwok")
	script := "#!/bin/sh\nif [ ! -e " + crashed + " ]; then touch " + crashed + "; echo 'fatal error: concurrent map writes'; exit 2; fi\nexec " + bins.Kwok + " \"$@\"\n"
	g.Expect(os.WriteFile(flaky, []byte(script), 0o755)).To(Succeed())
	bins.Kwok = flaky
	var log strings.Builder

	plane, err := Start(t.Context(), Options{Binaries: bins, Full: true, Log: &log})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = plane.Stop() })
	g.Expect(crashed).To(BeAnExistingFile(), "the first kwok crashed")
	g.Expect(log.String()).To(ContainSubstring("kwok exited while setting up its stages (attempt 1 of 3)"))
	g.Expect(log.String()).To(ContainSubstring("concurrent map writes"), "the crash's log is shown")
	pids, err := os.ReadFile(filepath.Join(plane.Dir, pidsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(pids), "kwok ")).To(Equal(1), "only the running kwok is in the pids file:\n%s", pids)
	g.Expect(syscall.Kill(plane.PIDs()["kwok"], 0)).To(Succeed())
}

// TestBinariesFrom_MissingBinaryTellsToRunMakeTools checks that a missing
// binary is named in the error together with the command that builds it.
func TestBinariesFrom_MissingBinaryTellsToRunMakeTools(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, "hack", "tools"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, versionsFile), []byte(
		"# versions\nETCD_VERSION=v3.5.21\nKUBE_VERSION=v1.32.4\n\nKWOK_VERSION=v0.7.0\n"), 0o644)).To(Succeed())
	// Every binary but kube-scheduler is in place.
	for _, p := range []string{"etcd-v3.5.21/etcd", "kube-v1.32.4/kube-apiserver", "kube-v1.32.4/kube-controller-manager", "kwok-v0.7.0/kwok"} {
		path := filepath.Join(root, "bin", p)
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	}

	_, err := BinariesFrom(root)
	g.Expect(err).To(MatchError(ContainSubstring(filepath.Join(root, "bin", "kube-v1.32.4", "kube-scheduler"))))
	g.Expect(err).To(MatchError(ContainSubstring("make tools")))

	g.Expect(os.WriteFile(filepath.Join(root, "bin", "kube-v1.32.4", "kube-scheduler"), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	bins, err := BinariesFrom(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bins.Kwok).To(Equal(filepath.Join(root, "bin", "kwok-v0.7.0", "kwok")))
}

// TestBinariesFrom_MissingVersionsFile checks the error when the versions
// file is not there, for example when the root is wrong.
func TestBinariesFrom_MissingVersionsFile(t *testing.T) {
	g := NewWithT(t)
	_, err := BinariesFrom(t.TempDir())
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "error %v wraps fs.ErrNotExist", err)
}

// testWriter sends the plane's progress lines to the test log.
type testWriter struct{ t *testing.T }

// Write logs p as one line.
func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-min(len(p), 1)]))
	return len(p), nil
}
