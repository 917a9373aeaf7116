package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
)

// statusFlags say where Reroll runs.
type statusFlags struct {
	// namespace is Reroll's namespace (--reroll-namespace).
	namespace string
	// selector selects Reroll's Deployments and pods.
	selector string
	// lease is the leader election Lease's name.
	lease string
	// metricsURL, when set, is scraped instead of a pod through the API
	// server's proxy.
	metricsURL string
	// changeSets is where the halt records are.
	changeSets changeSetFlags
	// metricsTokenFile holds the bearer token sent to Reroll's secure
	// metrics: to an HTTPS metricsURL (without it, the kubeconfig's is
	// sent), or through the port-forward to a pod (without it, the token of
	// the pod's --metrics-token-secret).
	metricsTokenFile string
	// metricsCAFile verifies an HTTPS metricsURL's certificate;
	// metricsInsecure skips the verification (the self-signed certificate
	// Reroll makes without --metrics-cert-dir).
	metricsCAFile   string
	metricsInsecure bool
}

func newStatus(o *Options) *cobra.Command {
	f := statusFlags{}
	var out *output
	cmd := &cobra.Command{
		Use:   "status [configmap/NAME|secret/NAME]",
		Short: "Show Reroll's replicas and leader, its queue and errors, workloads with invalid annotations, and halted change sets; or, for a ConfigMap or Secret of versioned config, the workloads and pods still on each version",
		Example: `  kubectl reroll status -A
  kubectl reroll status --reroll-namespace reroll-system --metrics-url http://localhost:9090/metrics
  kubectl reroll status secret/db-credentials -n shop`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			if len(args) == 1 {
				return rotationStatus(cmd.Context(), o, out, args[0])
			}
			s, err := newSession(o)
			if err != nil {
				return err
			}
			if ns := s.locate(cmd.Context(), cmd.Flags(), f.selector, &f.changeSets, &f.lease); ns != "" {
				f.namespace = ns
			}
			r, err := s.status(cmd.Context(), f)
			if err != nil {
				return err
			}
			if err := s.health.verdict(); err != nil {
				return err
			}
			if out.table() {
				return r.write(o.Out)
			}
			return out.print(o.Out, "Status", r)
		},
	}
	f.changeSets.addFlags(cmd)
	cmd.Flags().StringVar(&f.selector, "reroll-selector", "app.kubernetes.io/name=reroll", "Label selector of Reroll's Deployment and pods.")
	cmd.Flags().StringVar(&f.lease, "lease", "reroll-leader", "Name of Reroll's leader election Lease (--enable-ha); by default read from the controller's arguments (--leader-election-id).")
	cmd.Flags().StringVar(&f.metricsURL, "metrics-url", "", "Reroll's /metrics URL, when reachable from here; by default a Reroll pod's metrics port is read through a port-forward of the API server (pods/portforward) with the token of its --metrics-token-secret, or through the API server's pod proxy (pods/proxy) for plain metrics.")
	cmd.Flags().StringVar(&f.metricsTokenFile, "metrics-token-file", "", "File holding the bearer token sent to Reroll's secure metrics: to an https --metrics-url (by default the kubeconfig's bearer token is sent there), or through the port-forward instead of the token of Reroll's --metrics-token-secret (needed when Reroll has none: its user then needs get on the non-resource URL /metrics).")
	cmd.Flags().StringVar(&f.metricsCAFile, "metrics-ca-file", "", "CA certificates (PEM) that verify an https --metrics-url.")
	cmd.Flags().BoolVar(&f.metricsInsecure, "metrics-insecure-skip-tls-verify", false, "Do not verify the certificate of an https --metrics-url (the self-signed one Reroll makes without --metrics-cert-dir); use it only through kubectl port-forward. The kubeconfig's credentials are then never sent: it needs --metrics-token-file.")
	out = newOutput(cmd)
	return cmd
}

// objectRefs lists the workloads that need attention: those with invalid
// annotations, and the one whose rollout failed last.
func (r statusReport) objectRefs() []objectRef {
	var out []objectRef
	seen := map[objectRef]bool{}
	for _, e := range r.InvalidAnnotations {
		if !seen[e.ref] {
			seen[e.ref] = true
			out = append(out, e.ref)
		}
	}
	if r.LastError != nil && !seen[r.LastError.ref] {
		out = append(out, r.LastError.ref)
	}
	return out
}

// statusReport is `status`'s answer.
type statusReport struct {
	RerollNamespace string             `json:"rerollNamespace"`
	Deployments     []deploymentStatus `json:"deployments"`
	Pods            []podStatus        `json:"pods"`
	// Leader is the Lease's holder; LeaderProblem says why it is unknown.
	Leader        *leaderStatus  `json:"leader,omitempty"`
	LeaderProblem string         `json:"leaderProblem,omitempty"`
	Metrics       *metricsStatus `json:"metrics,omitempty"`
	// MetricsProblem says why the metrics could not be read.
	MetricsProblem string `json:"metricsProblem,omitempty"`
	// LastError is the newest RollFailed Event in the namespaces looked at.
	LastError *workloadEvent `json:"lastError,omitempty"`
	// InvalidAnnotations are the workloads with a current InvalidAnnotation
	// or InvalidWorkload Warning, newest first.
	InvalidAnnotations []workloadEvent `json:"invalidAnnotations"`
	// HaltedChangeSets are the change sets the circuit breaker halted.
	HaltedChangeSets []haltedSet `json:"haltedChangeSets"`
	Notes            []string    `json:"notes,omitempty"`
}

type deploymentStatus struct {
	Name    string `json:"name"`
	Desired int32  `json:"desired"`
	Ready   int32  `json:"ready"`
}

type podStatus struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	Leader   bool   `json:"leader"`
}

type leaderStatus struct {
	Holder    string    `json:"holder"`
	RenewTime time.Time `json:"renewTime"`
}

type metricsStatus struct {
	// Source is where they were read (a URL with any credentials redacted,
	// or "pods/NAME via the API server").
	Source string `json:"source"`
	// QueueDepth is the sum of workqueue_depth over Reroll's controllers.
	QueueDepth float64 `json:"queueDepth"`
	// ReconcileErrors is controller_runtime_reconcile_errors_total.
	ReconcileErrors float64 `json:"reconcileErrors"`
	// Rollouts and FailedRollouts are reroll_rollouts_total by result.
	Rollouts       float64 `json:"rollouts"`
	FailedRollouts float64 `json:"failedRollouts"`
}

type workloadEvent struct {
	Workload string    `json:"workload"`
	Reason   string    `json:"reason"`
	Message  string    `json:"message"`
	Time     time.Time `json:"time"`
	// ref is the workload, for -o name.
	ref objectRef
}

func (s *session) status(ctx context.Context, f statusFlags) (statusReport, error) {
	if f.namespace == "" {
		// --reroll-namespace, shared with the halt records' flags.
		f.namespace = f.changeSets.namespace
	}
	r := statusReport{RerollNamespace: f.namespace, Deployments: []deploymentStatus{}, Pods: []podStatus{}, InvalidAnnotations: []workloadEvent{}}
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return r, fmt.Errorf("--reroll-selector: %w", err)
	}
	var deps appsv1.DeploymentList
	if err := s.client.List(ctx, &deps, client.InNamespace(f.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		r.Notes = append(r.Notes, "could not list Deployments in "+f.namespace+": "+readError(err).Error())
	}
	for _, d := range deps.Items {
		desired := int32(1)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		r.Deployments = append(r.Deployments, deploymentStatus{Name: d.Name, Desired: desired, Ready: d.Status.ReadyReplicas})
	}
	var lease coordinationv1.Lease
	leader := ""
	switch err := s.client.Get(ctx, types.NamespacedName{Namespace: f.namespace, Name: f.lease}, &lease); {
	case apierrors.IsNotFound(err):
		r.LeaderProblem = "no Lease " + f.lease + ": Reroll runs without --enable-ha (one replica acts), or not in " + f.namespace
	case err != nil:
		r.LeaderProblem = "could not read Lease " + f.lease + ": " + readError(err).Error()
	default:
		if lease.Spec.HolderIdentity != nil {
			leader = *lease.Spec.HolderIdentity
		}
		r.Leader = &leaderStatus{Holder: leader}
		if lease.Spec.RenewTime != nil {
			r.Leader.RenewTime = lease.Spec.RenewTime.Time
		}
	}
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.InNamespace(f.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		r.Notes = append(r.Notes, "could not list pods in "+f.namespace+": "+readError(err).Error())
	}
	scrape := ""
	for _, p := range pods.Items {
		ps := podStatus{Name: p.Name, Phase: string(p.Status.Phase)}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ps.Ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			ps.Restarts += c.RestartCount
		}
		// controller-runtime's holder identity is "<hostname>_<uuid>"; a
		// pod's hostname is its name.
		ps.Leader = leader != "" && (leader == p.Name || strings.HasPrefix(leader, p.Name+"_"))
		if ps.Ready && (scrape == "" || ps.Leader) {
			scrape = p.Name
		}
		r.Pods = append(r.Pods, ps)
	}
	switch {
	case f.metricsURL != "":
		r.Metrics, err = s.scrapeURL(ctx, f)
	case scrape != "":
		r.Metrics, err = s.scrapePod(ctx, f, f.namespace, pods.Items, scrape)
	default:
		err = fmt.Errorf("no ready Reroll pod in %s (selector %s) and no --metrics-url", f.namespace, f.selector)
	}
	if err != nil {
		r.MetricsProblem = err.Error()
	}
	invalid, failed, err := s.warnings(ctx)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	r.InvalidAnnotations, r.LastError = invalid, failed
	halted, notes, err := s.haltedSets(ctx, f.changeSets)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	r.HaltedChangeSets = append([]haltedSet{}, halted...)
	r.Notes = append(r.Notes, notes...)
	return r, nil
}

// warnings returns, in the session's namespaces, the newest
// InvalidAnnotation or InvalidWorkload Warning per workload and the newest
// RollFailed one.
func (s *session) warnings(ctx context.Context) ([]workloadEvent, *workloadEvent, error) {
	var list corev1.EventList
	if err := s.client.List(ctx, &list, client.InNamespace(s.namespace), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil, nil, fmt.Errorf("could not list Warning Events: %w", readError(err))
	}
	evs := newestRerollEvents(list.Items)
	invalid := []workloadEvent{}
	seen := map[string]bool{}
	var failed *workloadEvent
	for _, e := range evs {
		w := e.InvolvedObject.Kind + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		we := workloadEvent{Workload: w, Reason: e.Reason, Message: e.Message, Time: eventTime(e),
			ref: objectRef{gvk: schema.FromAPIVersionAndKind(e.InvolvedObject.APIVersion, e.InvolvedObject.Kind), namespace: e.InvolvedObject.Namespace, name: e.InvolvedObject.Name}}
		switch e.Reason {
		case plan.ReasonInvalidAnnotation, plan.ReasonInvalidWorkload:
			if !seen[w] {
				seen[w] = true
				invalid = append(invalid, we)
			}
		case plan.ReasonRollFailed:
			if failed == nil {
				failed = &we
			}
		}
	}
	return invalid, failed, nil
}

// scrapePod reads the metrics of pod name, on the container port named
// "metrics" (else the port of its --metrics-bind-address), as its
// container's arguments say they are served:
//   - plain (--metrics-secure off, as in Reloader) through the API server's
//     pod proxy (get on pods/proxy);
//   - secure (the chart's default) through a port-forward (create on
//     pods/portforward), with a bearer token: --metrics-token-file's, or
//     else the one in the Secret of its --metrics-token-secret (get on that
//     Secret). The API server's pod proxy cannot carry one: its
//     authentication filter removes the caller's Authorization header
//     before it proxies. The kubeconfig's own credentials are never sent to
//     the pod (whoever may write pods in Reroll's namespace could run one
//     under its labels), so with API-server authorization (no
//     --metrics-token-secret) --metrics-token-file is needed.
func (s *session) scrapePod(ctx context.Context, f statusFlags, namespace string, pods []corev1.Pod, name string) (*metricsStatus, error) {
	var p *corev1.Pod
	for i := range pods {
		if pods[i].Name == name {
			p = &pods[i]
		}
	}
	if p == nil {
		return nil, fmt.Errorf("no pod %s in %s", name, namespace)
	}
	ctr := rerollContainer(p.Spec.Containers)
	if ctr == nil {
		return nil, fmt.Errorf("pod %s has no container", name)
	}
	cfg, err := containerConfig(ctr, namespace)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	port := cfg.MetricsPort
	for _, cp := range ctr.Ports {
		if cp.Name == "metrics" {
			port = strconv.Itoa(int(cp.ContainerPort))
		}
	}
	if !cfg.MetricsSecure {
		cs, err := kubernetes.NewForConfig(s.config)
		if err != nil {
			return nil, fmt.Errorf("creating the client: %w", err)
		}
		b, err := cs.CoreV1().Pods(namespace).ProxyGet("http", name, port, "metrics", nil).DoRaw(ctx)
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("reading the metrics of pod %s: you may not get pods/proxy in namespace %s, which reading Reroll's plain metrics through the API server needs: ask for it, or pass --metrics-url", name, namespace)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the metrics of pod %s through the API server's proxy: %w (try --metrics-url)", name, err)
		}
		return parseMetrics("pods/"+name+" via the API server", b)
	}
	token, err := s.podMetricsToken(ctx, f, name, cfg.MetricsTokenSecret)
	if err != nil {
		return nil, err
	}
	local, stop, err := s.portForward(ctx, namespace, name, port)
	if err != nil {
		return nil, err
	}
	// The stream is the API server's, to the pod it names: the pod's
	// certificate (self-signed without --metrics-cert-dir) is not checked.
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // reached through the API server's authenticated port-forward
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil, DisableKeepAlives: true}}
	source := "pods/" + name + " via port-forward"
	m, err := readMetrics(ctx, c, "https://"+local+"/metrics", source, token)
	said := strings.TrimSpace(stop())
	var none *noAnswerError
	if errors.As(err, &none) {
		// No HTTP answer: nothing listens on port in the pod, or the
		// kubelet could not reach it. client-go logs the kubelet's reason
		// to standard error; what the forward wrote on its own error
		// stream is added.
		err = fmt.Errorf("%w: pod %s gave no answer on port %s through the port-forward (the kubelet's reason, if any, is on standard error)", err, name, port)
		if said != "" {
			err = fmt.Errorf("%w; the port-forward said: %s", err, said)
		}
	}
	return m, err
}

// podMetricsToken returns the bearer token sent to pod name's secure
// metrics: --metrics-token-file's, or else the key "token" of the Secret
// tokenSecret (NAMESPACE/NAME, "" when the pod has none).
func (s *session) podMetricsToken(ctx context.Context, f statusFlags, name, tokenSecret string) (string, error) {
	if f.metricsTokenFile != "" {
		b, err := os.ReadFile(f.metricsTokenFile)
		if err != nil {
			return "", fmt.Errorf("--metrics-token-file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if tokenSecret == "" {
		return "", fmt.Errorf("pod %s serves /metrics over HTTPS to clients the API server authorizes for GET on the non-resource URL /metrics (--metrics-secure without --metrics-token-secret; chart metrics.auth: kubernetes), "+
			"and the plugin never sends your own credentials to a pod: pass --metrics-token-file with a token allowed that, e.g. `kubectl create token <serviceaccount> --duration=10m` "+
			"of a ServiceAccount bound to the chart's ClusterRole <release>-metrics-reader", name)
	}
	ns, secretName, _ := strings.Cut(tokenSecret, "/")
	var sec corev1.Secret
	switch err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: secretName}, &sec); {
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("you may not get Secret %s, which holds the bearer token of Reroll's metrics (--metrics-token-secret): reading them needs get on secrets (resourceNames %s) in namespace %s, and create on pods/portforward there; or pass --metrics-token-file", tokenSecret, secretName, ns)
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("no Secret %s, which Reroll creates on start with the bearer token of its metrics (--metrics-token-secret): is Reroll running?", tokenSecret)
	case err != nil:
		return "", fmt.Errorf("reading Secret %s, the bearer token of Reroll's metrics: %w", tokenSecret, err)
	}
	token := strings.TrimSpace(string(sec.Data["token"]))
	if token == "" {
		return "", fmt.Errorf("secret %s has no key token, which Reroll's metrics need", tokenSecret)
	}
	return token, nil
}

// portForward opens a port-forward to port of pod name through the API
// server, as `kubectl port-forward` does (WebSockets, falling back to
// SPDY), on a free local port of 127.0.0.1. It returns "127.0.0.1:PORT" and
// the function that closes it and returns what the forward reported on its
// error stream.
func (s *session) portForward(ctx context.Context, namespace, name, port string) (string, func() string, error) {
	// Without the session's health watch: a refused upgrade is an error of
	// the round trip, not an unreachable API server.
	cfg := rest.CopyConfig(s.config)
	cfg.WrapTransport = nil
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("creating the client: %w", err)
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to pod %s: %w", name, err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, cfg); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + port}, stopCh, readyCh, io.Discard, &errOut)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to pod %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	stop := func() string {
		close(stopCh)
		<-done
		return errOut.String()
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case <-readyCh:
	case err := <-done:
		// client-go's SPDY dialer keeps only the text of the API server's
		// refusal: ask the API server whether this user may.
		if !s.mayPortForward(ctx, cs, namespace) {
			return "", nil, fmt.Errorf("you may not create pods/portforward in namespace %s (get too, over WebSockets), which reading Reroll's secure metrics needs (the API server's pod proxy cannot carry their token): ask for it, or pass --metrics-url", namespace)
		}
		return "", nil, fmt.Errorf("port-forward to pod %s port %s: %w", name, port, err)
	case <-timeout.C:
		stop()
		return "", nil, fmt.Errorf("port-forward to pod %s port %s: not ready after 10s", name, port)
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("port-forward to pod %s: no local port: %w", name, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), stop, nil
}

// mayPortForward tells whether the API server lets this user create
// pods/portforward in namespace (a SelfSubjectAccessReview, which every
// user may create); true when it cannot tell.
func (s *session) mayPortForward(ctx context.Context, cs kubernetes.Interface, namespace string) bool {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create", Resource: "pods", Subresource: "portforward",
		}},
	}, metav1.CreateOptions{})
	return err != nil || r.Status.Allowed
}

// scrapeURL reads the metrics at f.metricsURL. An https URL is Reroll's
// secure metrics (metricsauth.ReviewFilter, or metricsauth.Filter with
// --metrics-token-secret): it gets a bearer token, from
// f.metricsTokenFile or the kubeconfig, which Reroll reviews with the API
// server (TokenReview) and whose user must be allowed to get the
// non-resource URL /metrics (SubjectAccessReview). A plain http URL never
// gets one.
func (s *session) scrapeURL(ctx context.Context, f statusFlags) (*metricsStatus, error) {
	parsed, err := url.Parse(f.metricsURL)
	if err != nil {
		return nil, fmt.Errorf("--metrics-url: %w", err)
	}
	c := http.DefaultClient
	if parsed.Scheme == "https" {
		if c, err = s.metricsClient(f); err != nil {
			return nil, err
		}
	}
	return readMetrics(ctx, c, f.metricsURL, parsed.Redacted(), "")
}

// readMetrics GETs rawURL with c, adding "Authorization: Bearer token" when
// token is not empty, and parses the answer; source names rawURL in
// messages (without credentials). A 401 or 403 says what to fix.
func readMetrics(ctx context.Context, c *http.Client, rawURL, source, token string) (*metricsStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("--metrics-url %s: %w", source, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, &noAnswerError{fmt.Errorf("reading %s: %w", source, unwrapURLError(err))}
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("reading %s: HTTP 401: the bearer token was refused: pass the token of the Secret that Reroll's --metrics-token-secret names (Reroll reads it at start), or, without that flag, one the API server accepts (TokenReview), with --metrics-token-file", source)
	case http.StatusForbidden:
		return nil, fmt.Errorf("reading %s: HTTP 403: the token's user may not get the non-resource URL /metrics; bind it to a ClusterRole allowing that (the chart's <release>-metrics-reader with metrics.auth=kubernetes)", source)
	case http.StatusBadRequest:
		if strings.HasPrefix(rawURL, "http:") {
			return nil, fmt.Errorf("reading %s: HTTP 400: Reroll serves /metrics over HTTPS (--metrics-secure): use an https URL", source)
		}
		return nil, fmt.Errorf("reading %s: HTTP 400", source)
	default:
		return nil, fmt.Errorf("reading %s: HTTP %d", source, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	return parseMetrics(source, b)
}

// metricsClient is the client of an https --metrics-url: TLS as f says,
// and the bearer token of f.metricsTokenFile or else the kubeconfig's
// credentials (a token, a token file, an exec or auth provider; never a
// client certificate, which the metrics endpoint does not read).
func (s *session) metricsClient(f statusFlags) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.metricsInsecure} //nolint:gosec // asked for with --metrics-insecure-skip-tls-verify
	if f.metricsCAFile != "" {
		pem, err := os.ReadFile(f.metricsCAFile)
		if err != nil {
			return nil, fmt.Errorf("--metrics-ca-file: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--metrics-ca-file %s: no PEM certificate", f.metricsCAFile)
		}
	}
	cfg := &rest.Config{}
	switch {
	case f.metricsTokenFile == "" && f.metricsInsecure:
		// The endpoint is not verified: it could be anyone, and the
		// kubeconfig's credentials are the user's own for the whole cluster.
		return nil, errors.New("with --metrics-insecure-skip-tls-verify the kubeconfig's credentials are never sent (an unverified endpoint could be anyone): " +
			"pass --metrics-token-file with a short-lived token (`kubectl create token <serviceaccount> --duration=10m`) of a ServiceAccount allowed only to get the non-resource URL /metrics")
	case f.metricsTokenFile != "":
		cfg.BearerTokenFile = f.metricsTokenFile
	case s.config.BearerToken != "" || s.config.BearerTokenFile != "" || s.config.ExecProvider != nil || s.config.AuthProvider != nil:
		cfg.BearerToken, cfg.BearerTokenFile = s.config.BearerToken, s.config.BearerTokenFile
		cfg.ExecProvider, cfg.AuthProvider, cfg.AuthConfigPersister = s.config.ExecProvider, s.config.AuthProvider, s.config.AuthConfigPersister
	default:
		return nil, errors.New("--metrics-url is https, which Reroll answers only with a bearer token its API server can review, and the kubeconfig has none (a client certificate is not one): " +
			"pass --metrics-token-file, e.g. with the output of `kubectl create token <serviceaccount>` of a ServiceAccount allowed to get the non-resource URL /metrics")
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment})
	if err != nil {
		return nil, fmt.Errorf("--metrics-url: %w", err)
	}
	return &http.Client{Transport: rt}, nil
}

// noAnswerError is a request to the metrics endpoint that got no HTTP
// answer (refused, reset, timed out).
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

// unwrapURLError drops net/http's copy of the URL, which may hold
// credentials.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// parseMetrics reads the Prometheus text format.
func parseMetrics(source string, b []byte) (*metricsStatus, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", source, err)
	}
	m := &metricsStatus{Source: source}
	m.QueueDepth = sum(fams["workqueue_depth"], nil)
	m.ReconcileErrors = sum(fams["controller_runtime_reconcile_errors_total"], nil)
	m.FailedRollouts = sum(fams["reroll_rollouts_total"], map[string]string{"result": "error"})
	m.Rollouts = sum(fams["reroll_rollouts_total"], nil) - m.FailedRollouts
	return m, nil
}

// sum adds the values of a family's series whose labels include match.
func sum(f *dto.MetricFamily, match map[string]string) float64 {
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.Metric {
		ok := true
		for k, v := range match {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	return total
}

// printable is s for a terminal: its control characters (an Event's note
// quotes a tenant's annotation, which may hold ESC sequences that move the
// cursor, rewrite the screen or set the window title) are shown escaped,
// as Go quotes them, never sent.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// write prints the report for a person.
func (r statusReport) write(w io.Writer) error {
	fmt.Fprintf(w, "Reroll in namespace %s\n", r.RerollNamespace)
	if len(r.Deployments) == 0 {
		fmt.Fprintln(w, "Deployments: none found")
	}
	for _, d := range r.Deployments {
		fmt.Fprintf(w, "Deployment:  %s, %d/%d ready\n", d.Name, d.Ready, d.Desired)
	}
	if len(r.Pods) > 0 {
		t := newTable(w, "  POD", "PHASE", "READY", "RESTARTS", "LEADER")
		for _, p := range r.Pods {
			t.row("  "+p.Name, p.Phase, yesNo(p.Ready), strconv.Itoa(int(p.Restarts)), yesNo(p.Leader))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if r.Leader != nil {
		fmt.Fprintf(w, "Leader:      %s (renewed %s ago)\n", printable(r.Leader.Holder), duration.HumanDuration(time.Since(r.Leader.RenewTime)))
	} else {
		fmt.Fprintf(w, "Leader:      %s\n", r.LeaderProblem)
	}
	if m := r.Metrics; m != nil {
		fmt.Fprintf(w, "Metrics:     from %s\n", m.Source)
		fmt.Fprintf(w, "  queue depth %g, reconcile errors %g, rollouts %g, failed rollouts %g\n", m.QueueDepth, m.ReconcileErrors, m.Rollouts, m.FailedRollouts)
	} else {
		fmt.Fprintf(w, "Metrics:     not read: %s\n", r.MetricsProblem)
	}
	if e := r.LastError; e != nil {
		fmt.Fprintf(w, "Last error:  %s ago, %s: %s\n", duration.HumanDuration(time.Since(e.Time)), printable(e.Workload), printable(e.Message))
	} else {
		fmt.Fprintln(w, "Last error:  no RollFailed Event")
	}
	if len(r.InvalidAnnotations) == 0 {
		fmt.Fprintln(w, "Invalid annotations: none")
	} else {
		fmt.Fprintln(w, "Invalid annotations:")
		sort.SliceStable(r.InvalidAnnotations, func(i, j int) bool { return r.InvalidAnnotations[i].Workload < r.InvalidAnnotations[j].Workload })
		t := newTable(w, "  WORKLOAD", "AGE", "MESSAGE")
		for _, e := range r.InvalidAnnotations {
			t.row("  "+printable(e.Workload), duration.HumanDuration(time.Since(e.Time)), printable(e.Message))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	writeHalted(w, r.HaltedChangeSets)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note:        %s\n", printable(n))
	}
	return nil
}
