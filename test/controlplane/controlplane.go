package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Timeouts of the readiness waits, measured from the start of Start.
const (
	// apiServerTimeout bounds the wait for etcd and kube-apiserver's /readyz.
	apiServerTimeout = 60 * time.Second
	// fullTimeout bounds the whole start of a full plane, up to the fake
	// Node being Ready and ServiceAccount default/default existing.
	fullTimeout = 90 * time.Second
	// pollInterval is how often readiness is checked.
	pollInterval = 100 * time.Millisecond
	// attemptTimeout bounds one readiness check.
	attemptTimeout = 5 * time.Second
)

// Names of the fake Node and of the markers kwok selects it by.
const (
	// NodeName is the name of the Node that kwok manages in a full plane.
	NodeName = "kwok-node-0"
	// kwokAnnotation and kwokAnnotationValue mark the nodes kwok manages,
	// matching its --manage-nodes-with-annotation-selector flag.
	kwokAnnotation      = "kwok.x-k8s.io/node"
	kwokAnnotationValue = "fake"
)

// serviceCIDR is the range of Service ClusterIPs; 10.0.0.1 is in the API
// server's certificate.
const serviceCIDR = "10.0.0.0/24"

// Options configure Start.
type Options struct {
	// Binaries are the paths of the binaries to run, usually from
	// BinariesFrom.
	Binaries Binaries
	// Dir is the plane's state folder: pki, kubeconfigs, etcd data, logs
	// and the pids file. Start creates it when needed and replaces the
	// state a previous plane left there, after stopping that plane's
	// processes. Empty means a new temporary folder that Stop removes.
	Dir string
	// Full starts kube-controller-manager, kube-scheduler and kwok with one
	// fake Node, so Deployments really roll; otherwise only etcd and
	// kube-apiserver run, enough for tests that only need the API.
	Full bool
	// Detach lets the processes outlive this Go process, for
	// `make cluster-up`: each starts in its own session and is not killed
	// when its parent dies. StopDir on Dir stops them later.
	Detach bool
	// Log receives progress lines such as
	// "started etcd on 127.0.0.1:PORT (pid N)". Nil discards them. The
	// processes' own output always goes to <Dir>/logs/<name>.log.
	Log io.Writer
}

// Plane is a running control plane.
type Plane struct {
	// Dir is the state folder, an absolute path.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig, whose client
	// certificate is in group system:masters.
	Kubeconfig string
	// Config is the admin client configuration, with QPS 200 and Burst 400
	// so that tests are not throttled on the client side.
	Config *rest.Config

	opts    Options
	log     io.Writer
	tempDir bool
	spawner *spawner
	procs   []*process
	pki     *pki
	ports   ports
}

// ports are the TCP ports, on 127.0.0.1, of one plane.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler, kwok int
}

// Start starts a control plane as o describes and returns once it serves:
// kube-apiserver answers /readyz and, for a full plane, the controller-manager
// and scheduler answer /healthz, the ServiceAccount default/default exists,
// the Node kwok-node-0 is Ready and kwok has run one Pod (startKwokWarm). It waits at most 60 s for the API
// server and 90 s for a full plane, and less when ctx ends first. On any
// failure it stops the processes it started and returns an error that names
// the process and carries the last 20 lines of its log.
func Start(ctx context.Context, o Options) (*Plane, error) {
	begin := time.Now()
	p := &Plane{opts: o, log: o.Log}
	if p.log == nil {
		p.log = io.Discard
	}
	if err := p.prepareDir(); err != nil {
		return nil, err
	}
	if !o.Detach {
		p.spawner = newSpawner()
	}
	if err := p.start(ctx, begin); err != nil {
		if stopErr := p.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop after failed start: %w", stopErr))
		}
		return nil, err
	}
	p.logf("control plane ready in %.1fs (kubeconfig %s)", time.Since(begin).Seconds(), p.Kubeconfig)
	return p, nil
}

// prepareDir creates the state folder, or clears the state a previous plane
// left in it, and the subfolders.
func (p *Plane) prepareDir() error {
	if p.opts.Dir == "" {
		dir, err := os.MkdirTemp("", "reroll-controlplane-")
		if err != nil {
			return fmt.Errorf("create state folder: %w", err)
		}
		p.Dir, p.tempDir = dir, true
	} else {
		dir, err := filepath.Abs(p.opts.Dir)
		if err != nil {
			return fmt.Errorf("resolve state folder %q: %w", p.opts.Dir, err)
		}
		p.Dir = dir
		// A crashed or detached earlier plane may still hold the folder.
		if err := StopDir(dir); err != nil {
			return fmt.Errorf("stop the previous plane in %s: %w", dir, err)
		}
		// Only what Start writes is removed, in case Dir is a folder that
		// holds other files.
		for _, name := range []string{"pki", "etcd", "logs", "kubeconfigs", "kubeconfig", pidsFile} {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("clear state folder: %w", err)
			}
		}
	}
	for _, sub := range []string{"logs", "kubeconfigs"} {
		if err := os.MkdirAll(filepath.Join(p.Dir, sub), 0o755); err != nil {
			return fmt.Errorf("create state folder: %w", err)
		}
	}
	p.Kubeconfig = filepath.Join(p.Dir, "kubeconfig")
	return nil
}

// start does the work of Start; the caller cleans up on error.
func (p *Plane) start(ctx context.Context, begin time.Time) error {
	free, err := freePorts(6)
	if err != nil {
		return err
	}
	p.ports = ports{
		etcdClient: free[0], etcdPeer: free[1], apiServer: free[2],
		controllerManager: free[3], scheduler: free[4], kwok: free[5],
	}
	if p.pki, err = newPKI(filepath.Join(p.Dir, "pki")); err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(p.ports.apiServer)
	kubeconfigs := map[string]string{"admin": p.Kubeconfig}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		kubeconfigs[name] = filepath.Join(p.Dir, "kubeconfigs", name)
	}
	for name, path := range kubeconfigs {
		if err := p.pki.writeKubeconfig(path, name, server); err != nil {
			return err
		}
	}
	p.Config = &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.pki.ca.certPEM,
			CertData: p.pki.clients["admin"].certPEM,
			KeyData:  p.pki.clients["admin"].keyPEM,
		},
		QPS:   200,
		Burst: 400,
	}
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return fmt.Errorf("create admin client: %w", err)
	}

	apiCtx, cancel := context.WithDeadline(ctx, begin.Add(apiServerTimeout))
	defer cancel()
	etcd, err := p.startEtcd()
	if err != nil {
		return err
	}
	if err := p.waitHTTP(apiCtx, etcd, fmt.Sprintf("http://127.0.0.1:%d/health", p.ports.etcdClient), http.DefaultClient); err != nil {
		return err
	}
	apiServer, err := p.startAPIServer()
	if err != nil {
		return err
	}
	if err := p.waitAPIServer(apiCtx, apiServer, client); err != nil {
		return err
	}
	p.logf("kube-apiserver ready on %s after %.1fs", server, time.Since(begin).Seconds())
	if !p.opts.Full {
		return nil
	}

	fullCtx, cancelFull := context.WithDeadline(ctx, begin.Add(fullTimeout))
	defer cancelFull()
	controllerManager, err := p.startControllerManager(kubeconfigs["kube-controller-manager"])
	if err != nil {
		return err
	}
	scheduler, err := p.startScheduler(kubeconfigs["kube-scheduler"])
	if err != nil {
		return err
	}
	if err := createNode(fullCtx, client); err != nil {
		return err
	}

	pool := x509.NewCertPool()
	pool.AddCert(p.pki.ca.cert)
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := p.waitHTTP(fullCtx, controllerManager, fmt.Sprintf("https://127.0.0.1:%d/healthz", p.ports.controllerManager), https); err != nil {
		return err
	}
	if err := p.waitHTTP(fullCtx, scheduler, fmt.Sprintf("https://127.0.0.1:%d/healthz", p.ports.scheduler), https); err != nil {
		return err
	}
	if err := p.waitDefaultServiceAccount(fullCtx, controllerManager, client); err != nil {
		return err
	}
	if err := installPortForwardCRD(fullCtx, p.Config); err != nil {
		return err
	}
	return p.startKwokWarm(fullCtx, kubeconfigs["kwok"], client)
}

// kwokAttempts is how many times Start starts kwok before it gives up.
const kwokAttempts = 3

// startKwokWarm starts kwok and makes it set up each of its lifecycle
// stages: it waits until kwok has marked the Node Ready and run one Pod
// (warmPod). kwok (v0.7 and v0.8) sets a stage up the first time a Node or a
// Pod reaches it, and the setup writes a map of github.com/wzshiming/easycel
// that has no lock: when the node and pod controllers do it at once, or one
// of them while another evaluates a stage, kwok dies with "concurrent map
// writes". Done here, one at a time, the setup is over before any test
// creates a Pod; kwok is started again when it died during it.
func (p *Plane) startKwokWarm(ctx context.Context, kubeconfig string, client kubernetes.Interface) error {
	for attempt := 1; ; attempt++ {
		kwok, err := p.startKwok(kubeconfig)
		if err != nil {
			return err
		}
		err = p.waitNodeReady(ctx, kwok, client)
		if err == nil {
			err = p.warmPod(ctx, kwok, client)
		}
		if err == nil {
			return nil
		}
		if !kwok.exited() || attempt == kwokAttempts {
			return err
		}
		p.logf("kwok exited while setting up its stages (attempt %d of %d); starting it again. %v", attempt, kwokAttempts, kwok.exitError())
		if err := p.forget(kwok); err != nil {
			return err
		}
	}
}

// warmPod creates a Pod bound to the fake Node in namespace default, waits
// until kwok reports it Running and deletes it.
func (p *Plane) warmPod(ctx context.Context, pr *process, client kubernetes.Interface) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kwok-warm-up-"},
		Spec: corev1.PodSpec{
			NodeName:                     NodeName,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "warm-up", Image: "kwok.invalid/warm-up"}},
		},
	}
	pods := client.CoreV1().Pods(metav1.NamespaceDefault)
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create warm-up pod: %w", err)
	}
	err = poll(ctx, pr, "pod "+pod.Name+" to be Running", func(ctx context.Context) error {
		got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase is %q", got.Status.Phase)
		}
		return nil
	})
	// Removed at once whatever happened: kwok need not be alive for it.
	if derr := pods.Delete(context.WithoutCancel(ctx), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); derr != nil && !apierrors.IsNotFound(derr) && err == nil {
		err = fmt.Errorf("delete warm-up pod: %w", derr)
	}
	return err
}

// forget removes an exited process from the plane's list and pids file, so
// that neither Stop nor StopDir signals its pid, which the system may give
// to another process.
func (p *Plane) forget(pr *process) error {
	p.procs = slices.DeleteFunc(p.procs, func(q *process) bool { return q == pr })
	return writePids(p.Dir, p.procs)
}

// startEtcd starts etcd with its data in <Dir>/etcd. fsync is off: the data
// is thrown away with the plane, and fsync dominates etcd's latency.
func (p *Plane) startEtcd() (*process, error) {
	client := fmt.Sprintf("http://127.0.0.1:%d", p.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.ports.etcdPeer)
	return p.run("etcd", p.opts.Binaries.Etcd, p.ports.etcdClient,
		"--name=reroll",
		"--data-dir="+filepath.Join(p.Dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=reroll="+peer,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
}

// startAPIServer starts kube-apiserver with RBAC, service-account token
// signing and the front-proxy CA for the aggregation layer's request headers.
// The endpoint reconciler is off because no other API server shares etcd and
// 127.0.0.1 is not a valid Endpoints address.
func (p *Plane) startAPIServer() (*process, error) {
	pki := p.pki.path
	return p.run("kube-apiserver", p.opts.Binaries.KubeAPIServer, p.ports.apiServer,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(p.ports.apiServer),
		"--cert-dir="+filepath.Join(p.Dir, "pki"),
		"--etcd-servers="+fmt.Sprintf("http://127.0.0.1:%d", p.ports.etcdClient),
		"--tls-cert-file="+pki("apiserver.crt"),
		"--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki("sa.pub"),
		"--service-account-signing-key-file="+pki(serviceAccountKey),
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		// kwok's Node has the addresses InternalIP 127.0.0.1 and Hostname
		// kwok-node-0, which no resolver knows: the kubelet calls
		// (pods/portforward) go to the IP.
		"--kubelet-preferred-address-types=InternalIP",
		"--requestheader-client-ca-file="+pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names="+frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+pki("front-proxy-client.crt"),
		"--proxy-client-key-file="+pki("front-proxy-client.key"),
	)
}

// componentServing are the flags that make the controller-manager and the
// scheduler serve /healthz on a free loopback port with a certificate of the
// plane's CA, and authenticate with the plane's CAs without reading the
// extension-apiserver-authentication ConfigMap.
func (p *Plane) componentServing(port int, kubeconfig string) []string {
	pki := p.pki.path
	return []string{
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + pki("serving.crt"),
		"--tls-private-key-file=" + pki("serving.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
	}
}

// startControllerManager starts kube-controller-manager with every default
// controller, each under its own service account as in a kubeadm cluster,
// and the cluster CA for CSR signing.
func (p *Plane) startControllerManager(kubeconfig string) (*process, error) {
	pki := p.pki.path
	args := append(p.componentServing(p.ports.controllerManager, kubeconfig),
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+pki(serviceAccountKey),
		"--root-ca-file="+pki("ca.crt"),
		"--cluster-signing-cert-file="+pki("ca.crt"),
		"--cluster-signing-key-file="+pki("ca.key"),
		"--controllers=*",
		// The default 20 requests per second make its start, which creates
		// a service account and token per controller, take seconds longer.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	)
	return p.run("kube-controller-manager", p.opts.Binaries.KubeControllerManager, p.ports.controllerManager, args...)
}

// startScheduler starts kube-scheduler; without it pods stay Pending, since
// kwok does not bind pods. The scheduler's --kubeconfig and --leader-elect
// flags are deprecated in favour of a configuration file, so it gets one.
func (p *Plane) startScheduler(kubeconfig string) (*process, error) {
	config := filepath.Join(p.Dir, "kubeconfigs", "kube-scheduler-config.yaml")
	data := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
`, kubeconfig)
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		return nil, fmt.Errorf("write kube-scheduler configuration: %w", err)
	}
	return p.run("kube-scheduler", p.opts.Binaries.KubeScheduler, p.ports.scheduler,
		append(p.componentServing(p.ports.scheduler, kubeconfig), "--config="+config)...)
}

// nodeLeaseSeconds is the duration of the fake Node's Lease, which kwok
// renews as a kubelet does (every quarter of it). Without a Lease, kwok
// v0.7 writes the Node's status only when the Node changes, so every
// --node-monitor-grace-period (50 s) the node lifecycle controller finds
// the Node's heartbeat stale, marks it NotReady for a moment and sets every
// pod on it Ready=False; kwok never sets them Ready again, and a workload
// that a test waits to be ready stays unready.
const nodeLeaseSeconds = 40

// startKwok starts kwok for the nodes annotated kwok.x-k8s.io/node=fake only,
// so a Node of another kind is never faked by accident.
func (p *Plane) startKwok(kubeconfig string) (*process, error) {
	return p.run("kwok", p.opts.Binaries.Kwok, p.ports.kwok,
		"--kubeconfig="+kubeconfig,
		fmt.Sprintf("--node-lease-duration-seconds=%d", nodeLeaseSeconds),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"="+kwokAnnotationValue,
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.1/16",
		"--server-address="+fmt.Sprintf("127.0.0.1:%d", p.ports.kwok),
		// kwok's server stands in for the kubelet's: HTTPS (the API
		// server's kubelet client speaks only that), announced as the
		// Node's kubelet port, and port-forwarding as ClusterPortForward
		// objects say (installPortForwardCRD), so that a test can reach a
		// local process through `pods/portforward` of a kwok pod.
		"--node-port="+strconv.Itoa(p.ports.kwok),
		"--tls-cert-file="+p.pki.path("serving.crt"),
		"--tls-private-key-file="+p.pki.path("serving.key"),
		"--enable-crds="+clusterPortForwardKind,
	)
}

// run starts one binary with its output in <Dir>/logs/<name>.log, records it
// in the pids file and logs "started NAME on 127.0.0.1:PORT (pid N)".
func (p *Plane) run(name, bin string, port int, args ...string) (*process, error) {
	logPath := filepath.Join(p.Dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// The child has its own copy of the descriptor.
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = p.Dir
	// Files rather than pipes: the output needs no copying goroutine, and a
	// detached process keeps writing after this Go process is gone.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if p.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
	} else {
		// Its own process group, so a Ctrl-C meant for the parent is not
		// delivered to it directly and Stop can signal the group, and
		// SIGKILL when the parent dies, so no test run leaks a plane.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err = p.spawner.start(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pr := &process{name: name, pid: cmd.Process.Pid, logPath: logPath, done: make(chan struct{})}
	go func() {
		pr.err = cmd.Wait()
		close(pr.done)
	}()
	p.procs = append(p.procs, pr)
	if err := writePids(p.Dir, p.procs); err != nil {
		return nil, err
	}
	p.logf("started %s on 127.0.0.1:%d (pid %d)", name, port, pr.pid)
	return pr, nil
}

// poll checks cond every pollInterval until it is true, ctx ends or pr
// exits, and returns an error about pr that includes the last error cond
// saw (what) and the tail of pr's log.
func poll(ctx context.Context, pr *process, what string, cond func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if pr.exited() {
			return false, pr.exitError()
		}
		// One slow answer must not use up the whole wait.
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		last = cond(attemptCtx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	if pr.exited() {
		return pr.exitError()
	}
	if last != nil {
		return pr.errorf("wait for %s: %w (last error: %v)", what, err, last)
	}
	return pr.errorf("wait for %s: %w", what, err)
}

// waitHTTP waits until url answers 200 OK.
func (p *Plane) waitHTTP(ctx context.Context, pr *process, url string, client *http.Client) error {
	return poll(ctx, pr, url, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		return nil
	})
}

// waitAPIServer waits until kube-apiserver's /readyz answers ok to the admin
// client, which includes the RBAC bootstrap roles being in place.
func (p *Plane) waitAPIServer(ctx context.Context, pr *process, client kubernetes.Interface) error {
	return poll(ctx, pr, "/readyz", func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

// waitNodeReady waits until kwok has marked the fake Node Ready.
func (p *Plane) waitNodeReady(ctx context.Context, pr *process, client kubernetes.Interface) error {
	return poll(ctx, pr, "node "+NodeName+" to be Ready", func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("Ready is %s: %s", c.Status, c.Message)
			}
		}
		return errors.New("no Ready condition yet")
	})
}

// waitDefaultServiceAccount waits until the controller-manager has created
// ServiceAccount default/default: until then the ServiceAccount admission
// plugin rejects pods in the namespace.
func (p *Plane) waitDefaultServiceAccount(ctx context.Context, pr *process, client kubernetes.Interface) error {
	return poll(ctx, pr, "serviceaccount default/default", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// createNode creates the Node that kwok fakes: generous capacity so that any
// test's pods fit, the label type=kwok for node selectors, and no taints.
func createNode(ctx context.Context, client kubernetes.Interface) error {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokAnnotation: kwokAnnotationValue},
			Labels: map[string]string{
				"type":                          "kwok",
				corev1.LabelHostname:            NodeName,
				corev1.LabelOSStable:            "linux",
				corev1.LabelArchStable:          "amd64",
				"kubernetes.io/role":            "agent",
				"node-role.kubernetes.io/agent": "",
			},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	return nil
}

// PIDs returns the process id of each started process by name (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok).
func (p *Plane) PIDs() map[string]int {
	pids := make(map[string]int, len(p.procs))
	for _, pr := range p.procs {
		pids[pr.name] = pr.pid
	}
	return pids
}

// Stop stops the processes, last started first: SIGTERM to each process
// group, then SIGKILL after five seconds. It removes the state folder if
// Start created it, and the pids file otherwise. Calling it twice is safe.
// It returns an error only when removing files fails.
func (p *Plane) Stop() error {
	for i := len(p.procs) - 1; i >= 0; i-- {
		p.procs[i].stop()
	}
	if p.spawner != nil {
		p.spawner.close()
		p.spawner = nil
	}
	if p.tempDir {
		if err := os.RemoveAll(p.Dir); err != nil {
			return fmt.Errorf("remove state folder: %w", err)
		}
		return nil
	}
	if err := os.Remove(filepath.Join(p.Dir, pidsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pids file: %w", err)
	}
	return nil
}

// logf writes one progress line.
func (p *Plane) logf(format string, args ...any) {
	fmt.Fprintf(p.log, format+"\n", args...)
}
