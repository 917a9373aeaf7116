package rules

import (
	"bytes"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// root is the repository's root, from this package's folder.
var root = filepath.Join("..", "..")

// promql is Prometheus' PromQL parser with its default options, as
// Prometheus and promtool load rule files.
var promql = parser.NewParser(parser.Options{})

// renderRules renders the chart's PrometheusRule with every alert on
// (webhook, Projections and restarts by eviction enabled) and returns its spec, the rule groups
// in Prometheus' rule file format.
func renderRules(t *testing.T) []byte {
	t.Helper()
	dir, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), "--dir", "helm").Output()
	if err != nil {
		t.Fatalf("hack/tools.sh --dir helm: %v", err)
	}
	helm := filepath.Join(strings.TrimSpace(string(dir)), "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing: run `make test-e2e` (hack/tools.sh helm builds it)", helm)
	}
	// The Kubernetes version of the tests' control plane (bin/kube-vX.Y.Z):
	// helm 3.16 assumes 1.31 unless told, which the chart's kubeVersion
	// refuses.
	kubeDir, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), "--dir", "kube").Output()
	if err != nil {
		t.Fatalf("hack/tools.sh --dir kube: %v", err)
	}
	kubeVersion := strings.TrimPrefix(filepath.Base(strings.TrimSpace(string(kubeDir))), "kube-")
	cmd := exec.Command(helm, "template", "r", filepath.Join(root, "charts", "reroll"), "--namespace", "reroll-system",
		"--kube-version", kubeVersion,
		"--show-only", "templates/prometheusrule.yaml",
		"--set", "prometheusRule.enabled=true", "--set", "webhook.enabled=true", "--set", "projections.enabled=true", "--set", "podEviction.enabled=true")
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var obj struct {
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(out, &obj); err != nil {
		t.Fatalf("decoding the PrometheusRule: %v", err)
	}
	spec, err := yaml.Marshal(&obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// served returns the metric names of docs/metrics.md's tables (the first
// cell of each row, e.g. `reroll_rollouts_total` or
// `controller_runtime_reconcile_total{controller,result}`).
func served(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile("^\\| (`[^|]+`) \\|")
	name := regexp.MustCompile("`([a-z_:][a-z0-9_:]*)")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		m := cell.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			out = append(out, n[1])
		}
	}
	return out
}

// anchors returns the GitHub anchors of the headings of docs/operations.md.
func anchors(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	var out []string
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		out = append(out, strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-"))
	}
	return out
}

// TestPrometheusRule_ParsesNamesServedMetricsAndHasRunbooks is promtool's
// check of the chart's rules, and more: each expression names only metrics
// Reroll serves (or Prometheus' own up), and each alert has a runbook
// section in docs/operations.md.
func TestPrometheusRule_ParsesNamesServedMetricsAndHasRunbooks(t *testing.T) {
	spec := renderRules(t)
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	known := append(served(t), "up")
	sections := anchors(t)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(known, vs.Name) {
					t.Errorf("%s: %s is not a metric docs/metrics.md lists", r.Alert, vs.Name)
				}
				return nil
			})
			u, err := url.Parse(r.Annotations["runbook_url"])
			if err != nil || u.Fragment == "" {
				t.Errorf("%s: runbook_url %q has no #section", r.Alert, r.Annotations["runbook_url"])
				continue
			}
			if !strings.HasSuffix(u.Path, "/docs/operations.md") {
				t.Errorf("%s: runbook_url %q is not docs/operations.md", r.Alert, u)
			}
			if !slices.Contains(sections, u.Fragment) {
				t.Errorf("%s: docs/operations.md has no section #%s", r.Alert, u.Fragment)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: no summary or description", r.Alert)
			}
		}
	}
	// The cases a team expects, each with its alert.
	want := []string{"RerollDown", "RerollReconcileErrors", "RerollRolloutsFailing", "RerollRolloutStormHeld",
		"RerollRolloutWaitingTooLong", "RerollChangeSetHalted", "RerollAlertSinkFailing", "RerollProjectionsFailing",
		"RerollWebhookCertificateExpiring", "RerollEvictionsBlocked", "RerollEvictionsFailing"}
	slices.Sort(want)
	slices.Sort(alerts)
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}

// The checks above can fail: a broken expression, an unknown metric and a
// missing section are each caught.
func TestPrometheusRule_ChecksCatchMistakes(t *testing.T) {
	bad := []byte(`groups:
  - name: g
    rules:
      - alert: Broken
        expr: sum(rate(reroll_rollouts_total[5m]) > 
`)
	if _, errs := rulefmt.Parse(bad, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler)); len(errs) == 0 {
		t.Error("a broken expression parsed")
	}
	if slices.Contains(served(t), "reroll_no_such_metric") || !slices.Contains(served(t), "reroll_rollouts_total") {
		t.Error("docs/metrics.md's names are not read right")
	}
	if slices.Contains(anchors(t), "no-such-section") || !slices.Contains(anchors(t), "runbooks") {
		t.Error("docs/operations.md's sections are not read right")
	}
}
