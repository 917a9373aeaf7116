//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/projection"
	"github.com/reroll/reroll/internal/workload"
)

// These tests render the chart with `helm template`; they need no control
// plane and run in parallel.

func TestHelmChart_Lint(t *testing.T) {
	t.Parallel()
	g := newT(t)
	_, err := run(helmEnv, helmBin, "lint", "--strict", chartDir)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = run(helmEnv, helmBin, append([]string{"lint", "--strict", chartDir}, setFlags(map[string]any{
		"replicas": 3, "serviceMonitor.enabled": true, "podMonitor.enabled": true, "podDisruptionBudget.enabled": true,
		"networkPolicy.enabled": true, "dashboards.enabled": true, "namespaces": []string{"a", "b"},
	})...)...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
}

func TestHelmChart_SchemaRejectsBadValues(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// set is one --set flag.
		set string
		// want is part of helm's error.
		want string
	}{
		"unknown key":                  {set: "foo=bar", want: "Additional property foo is not allowed"},
		"unknown nested key":           {set: "image.foo=bar", want: "Additional property foo is not allowed"},
		"misspelt Reloader key":        {set: "reloader.watchGlobaly=false", want: "Additional property watchGlobaly is not allowed"},
		"Reloader key of a wrong type": {set: "reloader.enableHA=maybe", want: "reloader.enableHA: Invalid type"},
		"string for an integer":        {set: "replicas=two", want: "replicas: Invalid type. Expected: integer, given: string"},
		"string for a boolean":         {set: "watchGlobally=maybe", want: "watchGlobally: Invalid type. Expected: boolean, given: string"},
		"string for a list":            {set: "ignoreNamespaces=kube-system", want: "ignoreNamespaces: Invalid type. Expected: array, given: string"},
		"unknown strategy":             {set: "reloadStrategy=restart", want: "reloadStrategy must be one of the following"},
		"unknown log level":            {set: "logLevel=verbose", want: "logLevel must be one of the following"},
		"unknown workload type":        {set: "ignoredWorkloadTypes={pods}", want: "ignoredWorkloadTypes.0 must be one of the following"},
		"invalid namespace name":       {set: "namespaces={Not_A_Name}", want: "namespaces.0: Does not match pattern"},
		"percentage above 100":         {set: "goMemLimitPercent=150", want: "goMemLimitPercent: Must be less than or equal to 100"},
		"webhook that is not a URL":    {set: "webhookUrl=example.com", want: "webhookUrl: Does not match pattern"},
		"extra arg that is not a flag": {set: "extraArgs={verbose}", want: "extraArgs.0: Does not match pattern"},
		"unknown alert sink":           {set: "alerts.sink=pager", want: "alerts.sink must be one of the following"},
		"alerts without a URL Secret":  {set: "alerts.enabled=true", want: "alerts.enabled needs alerts.urlSecret.name"},
		"lease that is not a duration": {set: "leaderElection.leaseDuration=long", want: "leaderElection.leaseDuration: Does not match pattern"},
		"unknown failure policy":       {set: "webhook.failurePolicy=Retry", want: "webhook.failurePolicy must be one of the following"},
		"webhook timeout above 5 s":    {set: "webhook.timeoutSeconds=10", want: "webhook.timeoutSeconds: Must be less than or equal to 5"},
		"unknown issuerRef key":        {set: "webhook.certManager.issuerRef.namespace=x", want: "Additional property namespace is not allowed"},
		// Rules between values, checked by the templates.
		"both kinds ignored":                {set: "ignoreSecrets=true,ignoreConfigMaps=true", want: "leaves nothing to watch"},
		"namespace selector in ns scope":    {set: "watchGlobally=false,namespaceSelector=team=a", want: "namespaceSelector needs cluster scope"},
		"watched and ignored":               {set: "namespaces={a},ignoreNamespaces={a}", want: "namespace a is both watched and in ignoreNamespaces"},
		"memory limit GOMEMLIMIT can't use": {set: "resources.limits.memory=lots", want: `resources.limits.memory "lots"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := run(helmEnv, helmBin, "template", "r", chartDir, "--set", tc.set)
			newT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)))
		})
	}
}

func TestHelmChart_ValuesBecomeFlags(t *testing.T) {
	t.Parallel()
	always := []string{"--metrics-bind-address=:9090", "--health-probe-bind-address=:8081", "--graceful-shutdown-timeout=25s", "--digest-key-secret=r-reroll-digest-key", "--job-journal=r-reroll-job-journal", "--pod-records=r-reroll-pod-records"}
	cases := map[string]struct {
		// values are the chart values set.
		values map[string]any
		// want are the container's args after always.
		want []string
	}{
		"defaults": {
			values: nil,
			want:   []string{"--reload-strategy=annotations", "--log-level=info"},
		},
		"every behaviour value": {
			values: map[string]any{
				"ignoreNamespaces": []string{"kube-system", "kube-public"}, "namespaceSelector": "team in (a,b),env!=dev",
				"resourceLabelSelector": "reroll=on", "reloadStrategy": "env-vars", "autoReloadAll": true,
				"reloadOnCreate": true, "reloadOnDelete": true, "ignoreSecrets": true,
				"ignoredWorkloadTypes": []string{"jobs", "cronjobs"}, "webhookUrl": "https://hooks.example/x?a=b",
				"logFormat": "json", "logLevel": "debug", "extraArgs": []string{"--auto-annotation=example.com/auto"},
				"allowCrossNamespaceReferences": true, "digestKey.keyedCompatHashes": true,
			},
			want: []string{
				"--allow-cross-namespace-references", "--keyed-compat-hashes",
				"--namespaces-to-ignore=kube-system,kube-public", "--namespace-selector=team in (a,b),env!=dev",
				"--resource-label-selector=reroll=on", "--reload-strategy=env-vars", "--auto-reload-all",
				"--reload-on-create", "--reload-on-delete", "--resources-to-ignore=secrets",
				"--ignored-workload-types=jobs,cronjobs", "--webhook-url=https://hooks.example/x?a=b",
				"--log-format=json", "--log-level=debug", "--auto-annotation=example.com/auto",
			},
		},
		"rollout safety": {
			values: map[string]any{"maxConcurrentRollouts": 20, "rolloutTimeout": "15m", "waitForRollout": true, "pausePeriod": "1m"},
			want: []string{"--reload-strategy=annotations", "--max-concurrent-rollouts=20", "--rollout-timeout=15m",
				"--wait-for-rollout", "--pause-period=1m", "--log-level=info"},
		},
		"ignore ConfigMaps": {
			values: map[string]any{"ignoreConfigMaps": true},
			want:   []string{"--reload-strategy=annotations", "--resources-to-ignore=configMaps", "--log-level=info"},
		},
		"release namespace only": {
			values: map[string]any{"watchGlobally": false},
			want:   []string{"--namespaces=reroll-system", "--reload-strategy=annotations", "--log-level=info"},
		},
		"namespaces list wins over watchGlobally": {
			values: map[string]any{"watchGlobally": true, "namespaces": []string{"a", "b"}},
			want:   []string{"--namespaces=a,b", "--reload-strategy=annotations", "--log-level=info"},
		},
		"several replicas elect a leader": {
			values: map[string]any{"replicas": 3},
			want:   []string{"--reload-strategy=annotations", "--log-level=info", "--enable-ha", "--leader-election-id=r-reroll-leader"},
		},
		"lease timings with leader election": {
			values: map[string]any{"replicas": 2, "leaderElection": map[string]any{"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"}},
			want: []string{"--reload-strategy=annotations", "--log-level=info", "--enable-ha", "--leader-election-id=r-reroll-leader",
				"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=4s"},
		},
		"lease timings without leader election": {
			values: map[string]any{"leaderElection.leaseDuration": "30s"},
			want:   []string{"--reload-strategy=annotations", "--log-level=info"},
		},
		"webhook with self-signed certificates": {
			values: map[string]any{"webhook.enabled": true, "webhook.port": 8443},
			want: []string{"--reload-strategy=annotations", "--log-level=info", "--enable-webhook", "--webhook-port=8443",
				"--webhook-cert-dir=/var/run/reroll/webhook-certs", "--webhook-service=r-reroll-webhook",
				"--webhook-cert-secret=r-reroll-webhook-cert", "--webhook-configuration-name=r-reroll"},
		},
		"projections": {
			values: map[string]any{"projections.enabled": true, "projections.conflictWindow": "5m"},
			want: []string{"--reload-strategy=annotations", "--log-level=info", "--enable-projections",
				"--projection-key-file=/var/run/reroll/projection-key/key", "--projection-service-account=default",
				"--projection-conflict-rewrites=3", "--projection-conflict-window=5m"},
		},
		"pprof and CSI integration": {
			values: map[string]any{"pprof.enabled": true, "pprof.address": ":6061", "csiIntegration.enabled": true},
			want:   []string{"--reload-strategy=annotations", "--log-level=info", "--enable-pprof", "--pprof-addr=:6061", "--enable-csi-integration"},
		},
		"webhook with cert-manager": {
			values: map[string]any{"webhook.enabled": true, "webhook.certManager.enabled": true},
			want: []string{"--reload-strategy=annotations", "--log-level=info", "--enable-webhook", "--webhook-port=9443",
				"--webhook-cert-dir=/var/run/reroll/webhook-certs", "--webhook-self-signed-certs=false"},
		},
	}
	flagsDoc := strings.Join(readLines(t, "docs/flags.md"), "\n")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			c := container(t, renderChart(t, tc.values))
			g.Expect(c.Args).To(gomega.Equal(append(slices.Clone(always), tc.want...)))
			for _, arg := range c.Args {
				flag, _, _ := strings.Cut(arg, "=")
				g.Expect(flagsDoc).To(gomega.ContainSubstring("| `"+flag+"` |"), "%s is a flag of the binary (docs/flags.md)", flag)
			}
		})
	}
}

func TestHelmChart_LeaderElectionGetsPodIdentity(t *testing.T) {
	t.Parallel()
	g := newT(t)
	objs := renderChart(t, map[string]any{"replicas": 2})
	c := container(t, objs)
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	g.Expect(env).To(gomega.Equal(map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}))
	leases := rulesOf(t, objs, "Role", "reroll-system")
	g.Expect(leases).To(gomega.ContainElements("coordination.k8s.io|leases|get", "coordination.k8s.io|leases|create", "coordination.k8s.io|leases|update"))
	g.Expect(leases).NotTo(gomega.ContainElement("coordination.k8s.io|leases|delete"))

	g.Expect(deploymentOf(t, objs).Spec.Strategy.Type).NotTo(gomega.Equal(appsv1.RecreateDeploymentStrategyType))

	one := renderChart(t, nil)
	g.Expect(withoutDigestKeyRole(only(one, "Role"))).To(gomega.BeEmpty(), "one replica needs no Lease")
	g.Expect(deploymentOf(t, one).Spec.Strategy.Type).To(gomega.Equal(appsv1.RecreateDeploymentStrategyType), "one replica without leader election never runs two")
}

func TestHelmChart_GracePeriodAboveShutdownTimeout(t *testing.T) {
	t.Parallel()
	g := newT(t)
	pod := deploymentOf(t, renderChart(t, nil)).Spec.Template.Spec
	g.Expect(*pod.TerminationGracePeriodSeconds).To(gomega.BeNumerically(">", 25))
	_, err := run(helmEnv, helmBin, append([]string{"template", "r", chartDir}, setFlags(map[string]any{"terminationGracePeriodSeconds": 25})...)...)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("terminationGracePeriodSeconds must be larger than gracefulShutdownTimeoutSeconds")))
}

func TestHelmChart_GoMemLimitIsAShareOfTheMemoryLimit(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// memory is resources.limits.memory; nil removes the limits.
		memory any
		// percent is goMemLimitPercent; nil keeps the default, 90.
		percent any
		// want is GOMEMLIMIT, "" when unset.
		want string
	}{
		"default 256Mi at 90%": {memory: "256Mi", want: "241591910"},
		"1Gi at 80%":           {memory: "1Gi", percent: 80, want: "858993459"},
		"fraction of Gi":       {memory: "0.5Gi", want: "483183820"},
		"decimal suffix":       {memory: "500M", want: "450000000"},
		"plain bytes":          {memory: 268435456, want: "241591910"},
		"plain bytes, string":  {memory: "268435456", want: "241591910"},
		"0% turns it off":      {memory: "256Mi", percent: 0, want: ""},
		"no memory limit":      {memory: nil, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// null removes the key from the defaults.
			values := map[string]any{"resources.limits.memory": tc.memory}
			if tc.percent != nil {
				values["goMemLimitPercent"] = tc.percent
			}
			var got string
			for _, e := range container(t, renderChart(t, values)).Env {
				if e.Name == "GOMEMLIMIT" {
					got = e.Value
				}
			}
			newT(t).Expect(got).To(gomega.Equal(tc.want))
		})
	}
}

func TestHelmChart_PodIsRestrictedWithProbesAndPorts(t *testing.T) {
	t.Parallel()
	g := newT(t)
	objs := renderChart(t, nil)
	c := container(t, objs)
	sc := c.SecurityContext
	g.Expect(sc).NotTo(gomega.BeNil())
	g.Expect(*sc.AllowPrivilegeEscalation).To(gomega.BeFalse())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(gomega.BeTrue())
	g.Expect(*sc.RunAsNonRoot).To(gomega.BeTrue())
	g.Expect(sc.Capabilities.Drop).To(gomega.Equal([]corev1.Capability{"ALL"}))
	pod := deploymentOf(t, objs).Spec.Template.Spec
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(gomega.Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect(c.Image).To(gomega.Equal("ghcr.io/reroll/reroll:" + chartAppVersion(t)))
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	g.Expect(ports).To(gomega.Equal(map[string]int32{"metrics": 9090, "probes": 8081}))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(gomega.Equal("/healthz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port.String()).To(gomega.Equal("probes"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(gomega.Equal("/readyz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port.String()).To(gomega.Equal("probes"))
}

func TestHelmChart_MonitorsSelectTheMetricsPort(t *testing.T) {
	t.Parallel()
	g := newT(t)
	objs := renderChart(t, map[string]any{"serviceMonitor.enabled": true, "podMonitor.enabled": true})
	podLabels := labels.Set(deploymentOf(t, objs).Spec.Template.Labels)

	services := only(objs, "Service")
	g.Expect(services).To(gomega.HaveLen(1))
	svc := convert[corev1.Service](t, services[0])
	g.Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels)).To(gomega.BeTrue(), "the Service selects the pods")
	g.Expect(svc.Spec.Ports).To(gomega.ConsistOf(gomega.HaveField("Name", "metrics")))

	sm := only(objs, "ServiceMonitor")
	g.Expect(sm).To(gomega.HaveLen(1))
	g.Expect(matchLabels(t, sm[0]).Matches(labels.Set(svc.Labels))).To(gomega.BeTrue(), "the ServiceMonitor selects the Service")
	g.Expect(nested(t, sm[0], "spec", "endpoints")).To(gomega.ConsistOf(gomega.And(gomega.HaveKeyWithValue("port", "metrics"), gomega.HaveKeyWithValue("honorLabels", true))))

	pm := only(objs, "PodMonitor")
	g.Expect(pm).To(gomega.HaveLen(1))
	g.Expect(matchLabels(t, pm[0]).Matches(podLabels)).To(gomega.BeTrue(), "the PodMonitor selects the pods")
	g.Expect(nested(t, pm[0], "spec", "podMetricsEndpoints")).To(gomega.ConsistOf(gomega.And(gomega.HaveKeyWithValue("port", "metrics"), gomega.HaveKeyWithValue("honorLabels", true))))

	g.Expect(only(renderChart(t, nil), "ServiceMonitor")).To(gomega.BeEmpty(), "off by default")
}

// TestHelmChart_RBACMatchesGeneratedRole keeps the chart's rules equal to
// config/rbac/role.yaml, which controller-gen generates from the
// +kubebuilder:rbac markers (`make manifests`), minus exactly what the values
// make unnecessary: code and chart cannot drift apart, and the chart grants
// nothing more.
func TestHelmChart_RBACMatchesGeneratedRole(t *testing.T) {
	t.Parallel()
	generated := generatedRules(t)
	without := func(resources ...string) []string {
		var out []string
		for _, p := range generated {
			if !slices.Contains(resources, strings.Split(p, "|")[1]) {
				out = append(out, p)
			}
		}
		return out
	}
	cases := map[string]struct {
		// values are the chart values set.
		values map[string]any
		// kind is "ClusterRole" or "Role"; namespaces are where Roles are.
		kind       string
		namespaces []string
		// want are the permissions, group|resource|verb.
		want []string
	}{
		"cluster scope with namespaceSelector": {values: map[string]any{"namespaceSelector": "a=b"}, kind: "ClusterRole", want: generated},
		"cluster scope":                        {kind: "ClusterRole", want: without("namespaces")},
		"ignoreSecrets":                        {values: map[string]any{"ignoreSecrets": true}, kind: "ClusterRole", want: without("namespaces", "secrets")},
		"ignoreConfigMaps":                     {values: map[string]any{"ignoreConfigMaps": true}, kind: "ClusterRole", want: without("namespaces", "configmaps")},
		"ignored workload types": {
			values: map[string]any{"ignoredWorkloadTypes": []string{"daemonsets", "jobs"}}, kind: "ClusterRole", want: without("namespaces", "daemonsets", "jobs"),
		},
		"CSI integration": {
			values: map[string]any{"csiIntegration.enabled": true}, kind: "ClusterRole", want: append(without("namespaces"), generatedCSIRules(t)...),
		},
		"namespaces list":        {values: map[string]any{"namespaces": []string{"a", "b"}}, kind: "Role", namespaces: []string{"a", "b"}, want: without("namespaces")},
		"release namespace only": {values: map[string]any{"watchGlobally": false}, kind: "Role", namespaces: []string{"reroll-system"}, want: without("namespaces")},
		"projections": {
			values: map[string]any{"projections": map[string]any{"enabled": true}}, kind: "ClusterRole", want: append(without("namespaces"), projectionRules(t)...),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			objs := renderChart(t, tc.values)
			if tc.kind == "ClusterRole" {
				g.Expect(withoutDigestKeyRole(only(objs, "Role"))).To(gomega.BeEmpty())
				g.Expect(rulesOf(t, objs, "ClusterRole", "")).To(gomega.ConsistOf(tc.want))
				return
			}
			g.Expect(only(objs, "ClusterRole")).To(gomega.BeEmpty(), "namespace scope has no ClusterRole")
			g.Expect(only(objs, "ClusterRoleBinding")).To(gomega.BeEmpty())
			var in []string
			for _, r := range withoutDigestKeyRole(only(objs, "Role")) {
				in = append(in, r.GetNamespace())
			}
			g.Expect(in).To(gomega.ConsistOf(tc.namespaces), "Roles in exactly the watched namespaces")
			for _, ns := range tc.namespaces {
				g.Expect(rulesOf(t, objs, "Role", ns)).To(gomega.ConsistOf(tc.want), "Role in %s", ns)
			}
			for _, b := range only(objs, "RoleBinding") {
				if strings.HasSuffix(b.GetName(), "-digest-key") {
					continue
				}
				g.Expect(tc.namespaces).To(gomega.ContainElement(b.GetNamespace()))
			}
		})
	}
}

// generatedRules reads config/rbac/role.yaml as group|resource|verb
// triples, without the rules of Projections (projectionRules), which the
// chart and the Kustomize base grant only when Projections are enabled.
func generatedRules(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range allGeneratedRules(t) {
		if !isProjectionRule(p) {
			out = append(out, p)
		}
	}
	return out
}

// projectionRules are the rules of config/rbac/role.yaml that only
// --enable-projections needs: impersonate on ServiceAccounts, and
// Projections.
func projectionRules(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range allGeneratedRules(t) {
		if isProjectionRule(p) {
			out = append(out, p)
		}
	}
	return out
}

func isProjectionRule(triple string) bool {
	return strings.HasPrefix(triple, "reroll.dev|") || strings.HasPrefix(triple, "|serviceaccounts|")
}

// allGeneratedRules reads config/rbac/role.yaml as group|resource|verb triples.
func allGeneratedRules(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config/rbac/role.yaml"))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	objs := decodeAll(t, string(data))
	newT(t).Expect(objs).To(gomega.HaveLen(1))
	return expand(convert[rbacv1.ClusterRole](t, objs[0]).Rules)
}

// rulesOf returns the rules of the single object of kind in namespace (""
// for a ClusterRole) as group|resource|verb triples: Reroll's own, not a
// ClusterRole aggregated to the admin role for users.
func rulesOf(t *testing.T, objs []*unstructured.Unstructured, kind, namespace string) []string {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range withoutDigestKeyRole(only(objs, kind)) {
		if o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" {
			continue
		}
		if o.GetNamespace() == namespace {
			found = append(found, o)
		}
	}
	newT(t).Expect(found).To(gomega.HaveLen(1), "one %s in %q", kind, namespace)
	if kind == "ClusterRole" {
		return expand(convert[rbacv1.ClusterRole](t, found[0]).Rules)
	}
	return expand(convert[rbacv1.Role](t, found[0]).Rules)
}

// withoutDigestKeyRole drops the Role of the digest key, which every install
// has in the release namespace (TestHelmChart_DigestKeyRole checks it).
func withoutDigestKeyRole(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Role" && strings.Contains(o.GetName(), "digest-key") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// expand flattens rules into sorted, distinct group|resource|verb triples,
// so that two ways of grouping the same permissions compare equal.
func expand(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, grp+"|"+res+"|"+v)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func deploymentOf(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	deps := only(objs, "Deployment")
	newT(t).Expect(deps).To(gomega.HaveLen(1))
	return convert[appsv1.Deployment](t, deps[0])
}

func matchLabels(t *testing.T, u *unstructured.Unstructured) labels.Selector {
	t.Helper()
	m, _, err := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return labels.SelectorFromSet(m)
}

func nested(t *testing.T, u *unstructured.Unstructured, fields ...string) []any {
	t.Helper()
	v, _, err := unstructured.NestedSlice(u.Object, fields...)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return v
}

// chartAppVersion reads appVersion from the chart's Chart.yaml.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`^appVersion:\s*"?([^"\s]+)"?`)
	for _, line := range readLines(t, chartDir+"/Chart.yaml") {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}

func TestHelmChart_WebhookObjects(t *testing.T) {
	t.Parallel()
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		objs := renderChart(t, nil)
		newT(t).Expect(only(objs, "MutatingWebhookConfiguration")).To(gomega.BeEmpty())
		newT(t).Expect(container(t, objs).VolumeMounts).To(gomega.BeEmpty())
	})
	t.Run("self-signed", func(t *testing.T) {
		t.Parallel()
		g := newT(t)
		objs := renderChart(t, map[string]any{"webhook.enabled": true, "namespaces": []string{"a", "b"},
			"ignoredWorkloadTypes": []string{"jobs"}, "webhook.failurePolicy": "Fail", "networkPolicy.enabled": true})
		cfgs := only(objs, "MutatingWebhookConfiguration")
		g.Expect(cfgs).To(gomega.HaveLen(1))
		cfg := convert[admissionregistrationv1.MutatingWebhookConfiguration](t, cfgs[0])
		var resources []string
		for _, w := range cfg.Webhooks {
			resources = append(resources, w.Rules[0].Resources...)
			g.Expect(w.ObjectSelector.MatchLabels).To(gomega.Equal(map[string]string{"reroll.dev/managed": "true"}))
			g.Expect(w.NamespaceSelector.MatchExpressions).To(gomega.ConsistOf(metav1.LabelSelectorRequirement{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}))
			g.Expect(*w.FailurePolicy).To(gomega.Equal(admissionregistrationv1.Fail))
			g.Expect(*w.TimeoutSeconds).To(gomega.BeNumerically("<=", 5))
			g.Expect(w.ClientConfig.Service.Name).To(gomega.Equal("r-reroll-webhook"))
		}
		g.Expect(resources).To(gomega.ConsistOf("deployments", "statefulsets", "daemonsets", "cronjobs", "rollouts", "deploymentconfigs"),
			"every kind Reroll rolls, minus ignoredWorkloadTypes")
		// Each webhook calls the path Reroll serves that kind's handler on.
		served := map[string]string{}
		for _, k := range append(workload.Builtin(), workload.CronJob{}, workload.Job{}, workload.ArgoRollout(), workload.DeploymentConfig()) {
			served[workload.Plural(k)] = controller.WebhookPath(k)
		}
		for _, w := range cfg.Webhooks {
			g.Expect(*w.ClientConfig.Service.Path).To(gomega.Equal(served[w.Rules[0].Resources[0]]), "webhook %s", w.Name)
		}
		g.Expect(only(objs, "Secret")).To(gomega.HaveLen(1))
		g.Expect(only(objs, "Certificate")).To(gomega.BeEmpty())
		c := container(t, objs)
		g.Expect(c.Ports).To(gomega.ContainElement(corev1.ContainerPort{Name: "webhook", ContainerPort: 9443, Protocol: corev1.ProtocolTCP}))
		g.Expect(c.VolumeMounts).To(gomega.ConsistOf(corev1.VolumeMount{Name: "webhook-certs", MountPath: "/var/run/reroll/webhook-certs", ReadOnly: true}))
		var svcPorts []any
		for _, svc := range only(objs, "Service") {
			if svc.GetName() == "r-reroll-webhook" {
				svcPorts = nested(t, svc, "spec", "ports")
			}
		}
		g.Expect(svcPorts).To(gomega.HaveLen(1))
		np := convert[networkingv1.NetworkPolicy](t, only(objs, "NetworkPolicy")[0])
		var open []string
		for _, r := range np.Spec.Ingress {
			for _, p := range r.Ports {
				open = append(open, p.Port.String())
			}
		}
		g.Expect(open).To(gomega.ContainElement("webhook"))
	})
	t.Run("projection targets", func(t *testing.T) {
		t.Parallel()
		g := newT(t)
		rules := []map[string]any{{"apiGroups": []string{"goharbor.io"}, "resources": []string{"harborclusters"}}, {"apiGroups": []string{"example.com"}, "resources": []string{"a", "b"}}}
		projected := func(values map[string]any) []admissionregistrationv1.MutatingWebhook {
			var out []admissionregistrationv1.MutatingWebhook
			for _, c := range only(renderChart(t, values), "MutatingWebhookConfiguration") {
				for _, w := range convert[admissionregistrationv1.MutatingWebhookConfiguration](t, c).Webhooks {
					if w.ObjectSelector.MatchLabels[projection.ProjectedLabel] != "" {
						out = append(out, w)
					}
				}
			}
			return out
		}
		hooks := projected(map[string]any{"webhook.enabled": true, "projections.enabled": true, "projections.webhookRules": rules, "namespaces": []string{"a"}})
		g.Expect(hooks).To(gomega.HaveLen(1))
		w := hooks[0]
		g.Expect(*w.ClientConfig.Service.Path).To(gomega.Equal(projection.WebhookPath))
		g.Expect(w.ObjectSelector.MatchLabels).To(gomega.Equal(map[string]string{projection.ProjectedLabel: "true"}))
		g.Expect(w.NamespaceSelector.MatchExpressions[0].Values).To(gomega.Equal([]string{"a"}))
		g.Expect(w.Rules).To(gomega.HaveLen(2))
		for _, r := range w.Rules {
			g.Expect(r.Operations).To(gomega.Equal([]admissionregistrationv1.OperationType{admissionregistrationv1.Update}), "CREATE gets nothing")
			g.Expect(r.APIVersions).To(gomega.Equal([]string{"*"}))
		}
		g.Expect(w.Rules[1].Resources).To(gomega.Equal([]string{"a", "b"}))
		// None without rules, without Projections, or without the webhook.
		g.Expect(projected(map[string]any{"webhook.enabled": true, "projections.enabled": true})).To(gomega.BeEmpty())
		g.Expect(projected(map[string]any{"webhook.enabled": true, "projections.webhookRules": rules})).To(gomega.BeEmpty())
		g.Expect(projected(map[string]any{"projections.enabled": true, "projections.webhookRules": rules})).To(gomega.BeEmpty())
	})
	t.Run("webhook sources and client CA", func(t *testing.T) {
		t.Parallel()
		g := newT(t)
		objs := renderChart(t, map[string]any{"webhook.enabled": true, "networkPolicy.enabled": true,
			"networkPolicy.webhookFrom": []string{"10.0.0.0/28"}, "webhook.clientCA.secretName": "apiserver-client-ca"})
		np := convert[networkingv1.NetworkPolicy](t, only(objs, "NetworkPolicy")[0])
		var from []networkingv1.NetworkPolicyPeer
		for _, r := range np.Spec.Ingress {
			if len(r.Ports) == 1 && r.Ports[0].Port.String() == "webhook" {
				from = r.From
			}
		}
		g.Expect(from).To(gomega.ConsistOf(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/28"}}))
		c := container(t, objs)
		g.Expect(c.Args).To(gomega.ContainElement("--webhook-client-ca=/var/run/reroll/webhook-client-ca/ca.crt"))
		g.Expect(c.VolumeMounts).To(gomega.ContainElement(corev1.VolumeMount{Name: "webhook-client-ca", MountPath: "/var/run/reroll/webhook-client-ca", ReadOnly: true}))
	})
	t.Run("cert-manager", func(t *testing.T) {
		t.Parallel()
		g := newT(t)
		objs := renderChart(t, map[string]any{"webhook.enabled": true, "webhook.certManager.enabled": true})
		cfg := only(objs, "MutatingWebhookConfiguration")[0]
		g.Expect(cfg.GetAnnotations()).To(gomega.HaveKeyWithValue("cert-manager.io/inject-ca-from", "reroll-system/r-reroll-webhook"))
		certs := only(objs, "Certificate")
		g.Expect(certs).To(gomega.HaveLen(1))
		g.Expect(nested(t, certs[0], "spec", "dnsNames")).To(gomega.ContainElement("r-reroll-webhook.reroll-system.svc"))
		g.Expect(only(objs, "Issuer")).To(gomega.HaveLen(1))
		g.Expect(only(objs, "Secret")).To(gomega.BeEmpty(), "cert-manager creates the Secret")
		for _, r := range append(only(objs, "Role"), only(objs, "ClusterRole")...) {
			g.Expect(r.GetName()).NotTo(gomega.ContainSubstring("webhook"), "Reroll needs no access to certificates or the configuration")
		}

		objs = renderChart(t, map[string]any{"webhook.enabled": true, "webhook.certManager.enabled": true,
			"webhook.certManager.issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "ca"}})
		g.Expect(only(objs, "Issuer")).To(gomega.BeEmpty())
		kind, _, err := unstructured.NestedString(only(objs, "Certificate")[0].Object, "spec", "issuerRef", "kind")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(kind).To(gomega.Equal("ClusterIssuer"))
	})
}

func TestHelmChart_AlertsReadTheURLFromASecret(t *testing.T) {
	t.Parallel()
	g := newT(t)
	c := container(t, renderChart(t, map[string]any{"alerts": map[string]any{
		"enabled": true, "sink": "slack", "urlSecret": map[string]any{"name": "alerting", "key": "slack-url"},
		"proxy": "http://proxy.example:3128", "additionalInfo": "Cluster: prod-eu",
	}}))
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	g.Expect(env["ALERT_ON_RELOAD"].Value).To(gomega.Equal("true"))
	g.Expect(env["ALERT_SINK"].Value).To(gomega.Equal("slack"))
	g.Expect(env["ALERT_WEBHOOK_URL"].Value).To(gomega.BeEmpty(), "the URL is a credential: never in the pod spec")
	g.Expect(env["ALERT_WEBHOOK_URL"].ValueFrom.SecretKeyRef.Name).To(gomega.Equal("alerting"))
	g.Expect(env["ALERT_WEBHOOK_URL"].ValueFrom.SecretKeyRef.Key).To(gomega.Equal("slack-url"))
	g.Expect(env["ALERT_WEBHOOK_PROXY"].Value).To(gomega.Equal("http://proxy.example:3128"))
	g.Expect(env["ALERT_ADDITIONAL_INFO"].Value).To(gomega.Equal("Cluster: prod-eu"))

	for _, e := range container(t, renderChart(t, nil)).Env {
		g.Expect(e.Name).NotTo(gomega.HavePrefix("ALERT_"), "alerts are off by default")
	}
}

// TestHelmChart_ProjectionsAreForAdminsOnly checks that with Projections
// enabled the chart installs the CRD, kept on uninstall, and a ClusterRole
// for Projections aggregated to admin and to neither edit nor view.
func TestHelmChart_ProjectionsAreForAdminsOnly(t *testing.T) {
	t.Parallel()
	g := newT(t)
	g.Expect(only(renderChart(t, nil), "CustomResourceDefinition")).To(gomega.BeEmpty(), "off by default")
	objs := renderChart(t, map[string]any{"projections.enabled": true})
	crds := only(objs, "CustomResourceDefinition")
	g.Expect(crds).To(gomega.HaveLen(1))
	g.Expect(crds[0].GetName()).To(gomega.Equal("projections.reroll.dev"))
	g.Expect(crds[0].GetAnnotations()).To(gomega.HaveKeyWithValue("helm.sh/resource-policy", "keep"))
	var admin []*unstructured.Unstructured
	for _, o := range only(objs, "ClusterRole") {
		l := o.GetLabels()
		g.Expect(l).NotTo(gomega.HaveKey("rbac.authorization.k8s.io/aggregate-to-edit"))
		g.Expect(l).NotTo(gomega.HaveKey("rbac.authorization.k8s.io/aggregate-to-view"))
		if l["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" {
			admin = append(admin, o)
		}
	}
	g.Expect(admin).To(gomega.HaveLen(1))
	for _, p := range expand(convert[rbacv1.ClusterRole](t, admin[0]).Rules) {
		g.Expect(p).To(gomega.HavePrefix("reroll.dev|projections"))
	}
	secrets := only(objs, "Secret")
	g.Expect(secrets).To(gomega.HaveLen(1), "the digest key")
	key, _, err := unstructured.NestedString(secrets[0].Object, "data", "key")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(key).NotTo(gomega.BeEmpty())
}

// TestHelmChart_ReloaderValuesFile renders the chart with a Stakater Reloader
// values file that sets every Reloader key the chart maps
// (testdata/reloader-values.yaml) and with the same settings written in
// Reroll's own values (testdata/reroll-values.yaml): every object must be the
// same.
func TestHelmChart_ReloaderValuesFile(t *testing.T) {
	t.Parallel()
	g := newT(t)
	fromReloader := renderChartFile(t, "test/e2e/testdata/reloader-values.yaml")
	fromReroll := renderChartFile(t, "test/e2e/testdata/reroll-values.yaml")
	g.Expect(objectsByID(fromReloader)).To(gomega.Equal(objectsByID(fromReroll)))
	c := container(t, fromReloader)
	g.Expect(c.Image).To(gomega.Equal("ghcr.io/reroll/reroll:"+chartAppVersion(t)), "Reloader's image block is dropped")
	g.Expect(c.Args).To(gomega.ContainElements("--reload-strategy=env-vars", "--enable-csi-integration", "--enable-pprof", "--enable-ha"))
}

// TestHelmChart_ReloaderValues covers the Reloader keys whose mapping
// depends on other values, each compared with Reroll's values of the same
// meaning.
func TestHelmChart_ReloaderValues(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// reloader are Reloader's values; reroll the same in Reroll's.
		reloader, reroll map[string]any
	}{
		"scoped namespaces as a comma-separated string, release namespace added": {
			reloader: map[string]any{"reloader": map[string]any{"watchGlobally": false, "namespaces": "team-b,team-a"}},
			reroll:   map[string]any{"watchGlobally": false, "namespaces": []string{"reroll-system", "team-a", "team-b"}},
		},
		"scoped namespaces as a list": {
			reloader: map[string]any{"reloader": map[string]any{"namespaces": []string{"team-a"}}},
			reroll:   map[string]any{"namespaces": []string{"reroll-system", "team-a"}},
		},
		"namespace selector and ignored namespaces apply only when watching globally": {
			reloader: map[string]any{"reloader": map[string]any{"watchGlobally": false, "namespaceSelector": "env=prod", "ignoreNamespaces": "kube-system"}},
			reroll:   map[string]any{"watchGlobally": false},
		},
		"replicas without enableHA stay one": {
			reloader: map[string]any{"reloader": map[string]any{"deployment": map[string]any{"replicas": 3}}},
			reroll:   map[string]any{"replicas": 1},
		},
		"reloadStrategy annotations": {
			reloader: map[string]any{"reloader": map[string]any{"reloadStrategy": "annotations"}},
			reroll:   map[string]any{"reloadStrategy": "annotations"},
		},
		"ignoreConfigMaps and ignoreCronJobs": {
			reloader: map[string]any{"reloader": map[string]any{"ignoreConfigMaps": true, "ignoreCronJobs": true}},
			reroll:   map[string]any{"ignoreConfigMaps": true, "ignoredWorkloadTypes": []string{"cronjobs"}},
		},
		"empty and null Reloader defaults keep Reroll's": {
			reloader: map[string]any{"reloader": map[string]any{"deployment": map[string]any{
				"containerSecurityContext": map[string]any{}, "resources": map[string]any{}, "nodeSelector": nil,
				"env": map[string]any{"open": nil, "secret": nil, "field": nil, "existing": nil},
			}, "enableCSIIntegration": false, "enablePProf": false, "custom_annotations": map[string]any{}}},
			reroll: nil,
		},
		"image pull secrets given as objects": {
			reloader: map[string]any{"global": map[string]any{"imagePullSecrets": []map[string]any{{"name": "a"}}}},
			reroll:   map[string]any{"imagePullSecrets": []map[string]any{{"name": "a"}}},
		},
		"a Reloader image repository without image.name": {
			reloader: map[string]any{"image": map[string]any{"repository": "ghcr.io/stakater/reloader", "tag": "v1.4.21"}},
			reroll:   nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			newT(t).Expect(objectsByID(renderChart(t, tc.reloader))).To(gomega.Equal(objectsByID(renderChart(t, tc.reroll))))
		})
	}
}

// TestHelmChart_ReloaderKeysWithoutMeaningAreNoted installs (client-side dry
// run; Helm still asks the local control plane for its version) with Reloader keys that mean nothing to Reroll: the install succeeds
// and its notes name each key.
func TestHelmChart_ReloaderKeysWithoutMeaningAreNoted(t *testing.T) {
	t.Parallel()
	g := newT(t)
	out, err := helm(append([]string{"install", "r", chartDir, "--namespace", "reroll-system", "--dry-run=client"},
		setFlags(map[string]any{
			"image.name": "stakater/reloader", "image.repository": "ghcr.io/stakater/reloader",
			"reloader.isOpenshift": true, "reloader.syncAfterRestart": true, "reloader.enableMetricsByNamespace": true,
			"reloader.deployment.livenessProbe":      map[string]any{"timeoutSeconds": 5},
			"reloader.deployment.env.secret":         map[string]any{"ALERT_ON_RELOAD": "true"},
			"reloader.verticalPodAutoscaler.enabled": true,
			// Where Reloader's charts before 1.4 kept the image.
			"reloader.deployment.image": map[string]any{"name": "stakater/reloader", "tag": "v1.0.0", "pullPolicy": "IfNotPresent"},
		})...)...)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, notes, found := strings.Cut(out, "NOTES:")
	g.Expect(found).To(gomega.BeTrue())
	for _, key := range []string{"image:", "reloader.isOpenshift:", "reloader.syncAfterRestart:", "reloader.enableMetricsByNamespace:",
		"reloader.deployment.livenessProbe/readinessProbe:", "reloader.deployment.env.secret.ALERT_ON_RELOAD:", "reloader.verticalPodAutoscaler:",
		"reloader.deployment.image:"} {
		g.Expect(notes).To(gomega.ContainSubstring("  - "+key), "a NOTES line for %s", key)
	}

	out, err = helm("install", "r", chartDir, "--namespace", "reroll-system", "--dry-run=client")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).NotTo(gomega.ContainSubstring("Reloader values that have no meaning"), "no notes without Reloader values")
}

// renderChartFile runs `helm template` of the chart in namespace
// "reroll-system" with a values file (relative to the repository root).
func renderChartFile(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	out, err := run(helmEnv, helmBin, "template", "r", chartDir, "--namespace", "reroll-system", "-f", file)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return decodeAll(t, out)
}

// objectsByID keys rendered objects by kind, namespace and name.
func objectsByID(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

func TestHelmChart_WebhookURLFromASecret(t *testing.T) {
	t.Parallel()
	g := newT(t)
	c := container(t, renderChart(t, map[string]any{"webhookUrlSecret": map[string]any{"name": "notify", "key": "endpoint"}}))
	var hook *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "REROLL_WEBHOOK_URL" {
			hook = &c.Env[i]
		}
	}
	g.Expect(hook).NotTo(gomega.BeNil())
	g.Expect(hook.Value).To(gomega.BeEmpty(), "the URL is a credential: never in the pod spec")
	g.Expect(hook.ValueFrom.SecretKeyRef.Name).To(gomega.Equal("notify"))
	g.Expect(hook.ValueFrom.SecretKeyRef.Key).To(gomega.Equal("endpoint"))
	for _, a := range c.Args {
		g.Expect(a).NotTo(gomega.HavePrefix("--webhook-url"))
	}
	_, err := run(helmEnv, helmBin, append([]string{"template", "r", chartDir}, setFlags(map[string]any{"webhookUrl": "https://a.example", "webhookUrlSecret.name": "notify"})...)...)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("webhookUrl and webhookUrlSecret.name are both set")))
}

func TestHelmChart_DigestKeyRole(t *testing.T) {
	t.Parallel()
	g := newT(t)
	for _, values := range []map[string]any{nil, {"watchGlobally": false}, {"namespaces": []string{"a"}}} {
		objs := renderChart(t, values)
		var roles []rbacv1.Role
		for _, o := range only(objs, "Role") {
			if strings.HasSuffix(o.GetName(), "-digest-key") {
				roles = append(roles, *convert[rbacv1.Role](t, o))
			}
		}
		g.Expect(roles).To(gomega.HaveLen(1))
		g.Expect(roles[0].Namespace).To(gomega.Equal("reroll-system"))
		g.Expect(roles[0].Rules).To(gomega.ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"r-reroll-digest-key"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			// One signed ConfigMap per journal or record entry.
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
		))
		g.Expect(container(t, objs).Args).To(gomega.ContainElement("--digest-key-secret=r-reroll-digest-key"))
	}
}
