package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
	// metricsTokenFile holds the bearer token sent to an HTTPS metricsURL
	// (Reroll's secure metrics); without it, the kubeconfig's is sent.
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
		Use:   "status",
		Short: "Show Reroll's replicas and leader, its queue and errors, workloads with invalid annotations, and halted change sets",
		Example: `  kubectl reroll status -A
  kubectl reroll status --reroll-namespace reroll-system --metrics-url http://localhost:9090/metrics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.validate(); err != nil {
				return err
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
	cmd.Flags().StringVar(&f.metricsURL, "metrics-url", "", "Reroll's /metrics URL, when reachable from here (e.g. https://localhost:9090/metrics through kubectl port-forward); by default a pod's metrics port is read through the API server's proxy (pods/proxy), which works only with --metrics-secure=false.")
	cmd.Flags().StringVar(&f.metricsTokenFile, "metrics-token-file", "", "File holding the bearer token sent to an https --metrics-url; by default the kubeconfig's bearer token is sent. Its user needs get on the non-resource URL /metrics.")
	cmd.Flags().StringVar(&f.metricsCAFile, "metrics-ca-file", "", "CA certificates (PEM) that verify an https --metrics-url.")
	cmd.Flags().BoolVar(&f.metricsInsecure, "metrics-insecure-skip-tls-verify", false, "Do not verify the certificate of an https --metrics-url (the self-signed one Reroll makes without --metrics-cert-dir); use it only through kubectl port-forward.")
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
		r.Metrics, err = s.scrapePod(ctx, f.namespace, pods.Items, scrape)
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

// scrapePod reads the metrics of pod name through the API server's pod
// proxy, on the container port named "metrics" (9090 without one). Only
// plain metrics (--metrics-secure=false) can be read so: the secure ones
// answer only a bearer token the API server can review, and the API server
// removes the caller's Authorization header before it proxies (its
// authentication filter), so no token ever reaches the pod that way.
func (s *session) scrapePod(ctx context.Context, namespace string, pods []corev1.Pod, name string) (*metricsStatus, error) {
	// Plain unless told otherwise: --metrics-secure is off by default (as
	// Reloader serves them); the chart and config/ turn it on. The last one
	// given wins, as in pflag.
	port, secure := "9090", false
	for _, p := range pods {
		if p.Name != name {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == "metrics" {
					port = strconv.Itoa(int(cp.ContainerPort))
				}
			}
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				switch a {
				case "--metrics-secure", "--metrics-secure=true":
					secure = true
				case "--metrics-secure=false":
					secure = false
				}
			}
		}
	}
	if secure {
		return nil, fmt.Errorf("pod %s serves /metrics over HTTPS to authorized clients only (--metrics-secure, as the chart sets it), and the API server's pod proxy forwards no credentials: "+
			"run `kubectl -n %s port-forward pod/%s %s` and pass --metrics-url https://localhost:%s/metrics --metrics-insecure-skip-tls-verify "+
			"and --metrics-token-file with the token of the Secret that --metrics-token-secret names (the chart's <release>-metrics-token, key token); without --metrics-token-secret, your kubeconfig's bearer token is sent, and its user needs get on the non-resource URL /metrics (the chart's ClusterRole <release>-metrics-reader with metrics.auth=kubernetes), "+
			"or serve plain metrics (chart: metrics.secure: false)", name, namespace, name, port, port)
	}
	cs, err := kubernetes.NewForConfig(s.config)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	b, err := cs.CoreV1().Pods(namespace).ProxyGet("http", name, port, "metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading metrics of pod %s through the API server's proxy: %w (try --metrics-url)", name, readError(err))
	}
	return parseMetrics("pods/"+name+" via the API server", b)
}

// scrapeURL reads the metrics at f.metricsURL. An https URL is Reroll's
// secure metrics (controller-runtime's
// filters.WithAuthenticationAndAuthorization): it gets a bearer token, from
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
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.metricsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("--metrics-url %s: %w", parsed.Redacted(), err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", parsed.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("reading %s: HTTP 401: the API server did not accept the bearer token (TokenReview); pass a valid one with --metrics-token-file", parsed.Redacted())
	case http.StatusForbidden:
		return nil, fmt.Errorf("reading %s: HTTP 403: the token's user may not get the non-resource URL /metrics; bind it to a ClusterRole allowing that (the chart's <release>-metrics-reader with metrics.auth=kubernetes)", parsed.Redacted())
	case http.StatusBadRequest:
		if parsed.Scheme == "http" {
			return nil, fmt.Errorf("reading %s: HTTP 400: Reroll serves /metrics over HTTPS (--metrics-secure): use an https URL", parsed.Redacted())
		}
		return nil, fmt.Errorf("reading %s: HTTP 400", parsed.Redacted())
	default:
		return nil, fmt.Errorf("reading %s: HTTP %d", parsed.Redacted(), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", parsed.Redacted(), err)
	}
	return parseMetrics(parsed.Redacted(), b)
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
		fmt.Fprintf(w, "Leader:      %s (renewed %s ago)\n", r.Leader.Holder, duration.HumanDuration(time.Since(r.Leader.RenewTime)))
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
		fmt.Fprintf(w, "Last error:  %s ago, %s: %s\n", duration.HumanDuration(time.Since(e.Time)), e.Workload, e.Message)
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
			t.row("  "+e.Workload, duration.HumanDuration(time.Since(e.Time)), e.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	writeHalted(w, r.HaltedChangeSets)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note:        %s\n", n)
	}
	return nil
}
