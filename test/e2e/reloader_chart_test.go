//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// reloaderChart is Stakater Reloader's chart 2.2.15 (Reloader v1.4.21),
	// committed with its license (testdata/reloader-chart/NOTICE).
	reloaderChart = "test/e2e/testdata/reloader-chart"
	// reloaderOverrides are realistic Reloader values files.
	reloaderOverrides = "test/e2e/testdata/reloader-values"
)

// bothAPIs are the optional APIs both charts look for: with them, Reloader's
// chart renders its ServiceMonitor and VerticalPodAutoscaler.
var bothAPIs = []string{"--api-versions", "monitoring.coreos.com/v1", "--api-versions", "autoscaling.k8s.io/v1"}

// TestHelmChart_ReloaderValuesHaveReloadersEffects renders Reloader's own
// values.yaml and each override file of testdata/reloader-values with
// Reloader's chart and with Reroll's (the override alone, as most real files
// are, and on top of Reloader's whole values.yaml), and checks that every
// effect Reloader's rendering has is in Reroll's: the settings its arguments
// and environment give the binary, the alert Secret, the RBAC scope and what
// it may read, the pod's placement and identity, the probes, the monitors,
// the NetworkPolicy, the Service, the PDB and the VPA.
func TestHelmChart_ReloaderValuesHaveReloadersEffects(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(root, reloaderOverrides, "*.yaml"))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	newT(t).Expect(files).To(gomega.HaveLen(12))
	cases := map[string][]string{"Reloader's values.yaml": nil}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		cases[filepath.Base(f)] = []string{"-f", rel}
	}
	for name, override := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			want := effects(t, renderWith(t, reloaderChart, override), reloaderBinary)
			forms := map[string][]string{
				"whole file": append([]string{"-f", reloaderChart + "/values.yaml"}, override...),
			}
			if override != nil {
				forms["override alone"] = override
			}
			for form, args := range forms {
				got := effects(t, renderWith(t, chartDir, args), rerollBinary)
				for key, w := range want {
					if key == "reads namespaces" {
						// Reroll's ClusterRole reads Namespaces always (their
						// rollout-window and max-concurrent-rollouts
						// annotations), Reloader's only with a namespace
						// selector: Reroll must read them wherever Reloader does.
						g.Expect(got).To(gomega.HaveKeyWithValue(key, true), "%s: %s", form, key)
						continue
					}
					g.Expect(got).To(gomega.HaveKey(key), "%s: %s", form, key)
					g.Expect(got[key]).To(gomega.Equal(w), "%s: %s", form, key)
				}
			}
		})
	}
}

// TestHelmChart_RefusesReloaderValuesWithAnotherEffect: each value that
// Reroll's chart cannot render as Reloader's does fails `helm template`,
// naming the key and the fix; the same key at a value it can render passes.
func TestHelmChart_RefusesReloaderValuesWithAnotherEffect(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// refused is a value the chart refuses; accepted one it renders.
		refused, accepted map[string]any
		// want is a part of the error.
		want string
	}{
		"a Secret key Reloader's chart does not write": {
			refused:  map[string]any{"reloader.deployment.env.secret": map[string]any{"TOKEN": "x"}},
			accepted: map[string]any{"reloader.deployment.env.secret": map[string]any{"ALERT_SINK": "slack"}},
			want:     "reloader.deployment.env.secret: Reloader's chart writes only ALERT_ON_RELOAD",
		},
		"labels on the RBAC objects": {
			refused:  map[string]any{"reloader.rbac.labels": map[string]any{"team": "a"}},
			accepted: map[string]any{"reloader.rbac.labels": map[string]any{}},
			want:     "reloader.rbac.labels: Reroll's RBAC objects carry the chart's labels only",
		},
		"a mirror whose layout cannot be told": {
			refused:  map[string]any{"image.repository": "registry.example/stakater-reloader"},
			accepted: map[string]any{"image.repository": "registry.example/stakater/reloader"},
			want:     "image.repository: the chart cannot tell where Reroll's image is in this mirror",
		},
		"objects in another namespace": {
			refused:  map[string]any{"namespace": "tools"},
			accepted: map[string]any{"namespace": ""},
			want:     "namespace: install into that namespace with helm --namespace",
		},
		"a runtime class Reloader's chart ignores": {
			refused:  map[string]any{"reloader.deployment.runtimeClassName": "gvisor"},
			accepted: map[string]any{"reloader.deployment.runtimeClassName": ""},
			want:     "reloader.deployment.runtimeClassName: Reloader's chart ignores it",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			base := []string{"template", "r", chartDir, "--namespace", "reroll-system"}
			_, err := run(helmEnv, helmBin, append(base, setFlags(tc.accepted)...)...)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			_, err = run(helmEnv, helmBin, append(base, setFlags(tc.refused)...)...)
			g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)))
		})
	}
}

// renderWith runs `helm template` of chart with args in namespace
// "reroll-system", with both optional APIs.
func renderWith(t *testing.T, chart string, args []string) []*unstructured.Unstructured {
	t.Helper()
	full := append(append([]string{"template", "r", chart, "--namespace", "reroll-system"}, bothAPIs...), args...)
	out, err := run(helmEnv, helmBin, full...)
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return decodeAll(t, out)
}

// binary is what a binary does without arguments, where Reloader's and
// Reroll's differ.
type binary struct {
	// strategy is --reload-strategy's default.
	strategy string
	// ignores are the workload types it never rolls without a flag:
	// Reloader v1.4.21 rolls Argo Rollouts only with --is-Argo-Rollouts=true
	// and never DeploymentConfigs.
	ignores func(args settingsFlags) []string
}

var (
	reloaderBinary = binary{strategy: "env-vars", ignores: func(f settingsFlags) []string {
		out := []string{"deploymentconfigs"}
		if f.isArgoRollouts != "true" {
			out = append(out, "rollouts")
		}
		return out
	}}
	rerollBinary = binary{strategy: "annotations", ignores: func(settingsFlags) []string { return nil }}
)

// settingsFlags are the flags of Reloader v1.4.21
// (internal/pkg/util/util.go), parsed as its pflag parses them.
type settingsFlags struct {
	strategy, logFormat, logLevel, webhookURL, pprofAddr   string
	isArgoRollouts, reloadOnCreate, reloadOnDelete         string
	autoReloadAll, enableHA, syncAfterRestart, enablePProf bool
	enableCSI                                              bool
	names                                                  map[string]*string
	resourcesToIgnore, ignoredTypes, namespaces            []string
	namespacesToIgnore, namespaceSelector, resourceLabels  []string
}

// parseSettings parses args with Reloader's flag set; flags it does not
// declare (Reroll's own) are skipped.
func parseSettings(t *testing.T, args []string) settingsFlags {
	t.Helper()
	var f settingsFlags
	fs := pflag.NewFlagSet("reloader", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.StringVar(&f.strategy, "reload-strategy", "", "")
	fs.StringVar(&f.logFormat, "log-format", "", "")
	fs.StringVar(&f.logLevel, "log-level", "info", "")
	fs.StringVar(&f.webhookURL, "webhook-url", "", "")
	fs.StringVar(&f.pprofAddr, "pprof-addr", ":6060", "")
	fs.StringVar(&f.isArgoRollouts, "is-Argo-Rollouts", "false", "")
	fs.StringVar(&f.reloadOnCreate, "reload-on-create", "false", "")
	fs.StringVar(&f.reloadOnDelete, "reload-on-delete", "false", "")
	fs.BoolVar(&f.autoReloadAll, "auto-reload-all", false, "")
	fs.BoolVar(&f.enableHA, "enable-ha", false, "")
	fs.BoolVar(&f.syncAfterRestart, "sync-after-restart", false, "")
	fs.BoolVar(&f.enablePProf, "enable-pprof", false, "")
	fs.BoolVar(&f.enableCSI, "enable-csi-integration", false, "")
	f.names = map[string]*string{}
	for _, n := range []string{"configmap-annotation", "secret-annotation", "auto-annotation", "ignore-annotation", "configmap-auto-annotation",
		"secret-auto-annotation", "auto-search-annotation", "search-match-annotation", "pause-deployment-annotation", "pause-deployment-time-annotation"} {
		f.names[n] = fs.String(n, "", "")
	}
	fs.StringSliceVar(&f.resourcesToIgnore, "resources-to-ignore", nil, "")
	fs.StringSliceVar(&f.ignoredTypes, "ignored-workload-types", nil, "")
	fs.StringSliceVar(&f.namespaces, "namespaces", nil, "")
	fs.StringSliceVar(&f.namespacesToIgnore, "namespaces-to-ignore", nil, "")
	fs.StringSliceVar(&f.namespaceSelector, "namespace-selector", nil, "")
	fs.StringSliceVar(&f.resourceLabels, "resource-label-selector", nil, "")
	newT(t).Expect(fs.Parse(args)).To(gomega.Succeed())
	return f
}

// effects returns what a rendering makes the binary do and what the
// cluster gets, each under a name; values are strings, sorted lists or
// maps, so that the two charts' renderings compare with Equal.
func effects(t *testing.T, objs []*unstructured.Unstructured, bin binary) map[string]any {
	t.Helper()
	g := newT(t)
	out := map[string]any{}
	deps := only(objs, "Deployment")
	g.Expect(deps).To(gomega.HaveLen(1))
	d := convert[appsv1.Deployment](t, deps[0])
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	f := parseSettings(t, c.Args)
	ns := "reroll-system"

	// The settings the binary runs with.
	strategy := f.strategy
	if strategy == "" {
		strategy = bin.strategy
	}
	out["strategy"] = strategy
	out["switches"] = map[string]bool{
		"auto-reload-all": f.autoReloadAll, "reload-on-create": f.reloadOnCreate == "true", "reload-on-delete": f.reloadOnDelete == "true",
		"sync-after-restart": f.syncAfterRestart, "enable-pprof": f.enablePProf, "enable-csi-integration": f.enableCSI,
	}
	if f.enablePProf {
		out["pprof-addr"] = f.pprofAddr
	}
	out["log"] = f.logFormat + "/" + f.logLevel
	out["webhook-url"] = f.webhookURL
	names := map[string]string{}
	for n, v := range f.names {
		names[n] = *v
	}
	out["annotation names"] = names
	out["resources-to-ignore"] = lowerSorted(f.resourcesToIgnore)
	out["ignored-workload-types"] = lowerSorted(append(f.ignoredTypes, bin.ignores(f)...))
	watched := f.namespaces
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e, ok := env["KUBERNETES_NAMESPACE"]; ok && e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" && len(watched) == 0 {
		watched = []string{ns}
	}
	out["namespaces"] = lowerSorted(watched)
	out["namespaces-to-ignore"] = lowerSorted(f.namespacesToIgnore)
	out["namespace-selector"] = strings.Trim(strings.Join(f.namespaceSelector, ","), `"`)
	out["resource-label-selector"] = strings.Join(f.resourceLabels, ",")
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	out["replicas"] = replicas
	out["leader election"] = f.enableHA && replicas > 1

	// The environment a user or Reloader's chart sets, with each value's
	// source; the alert variables resolved through the Secret.
	secrets := map[string]map[string]string{}
	for _, s := range only(objs, "Secret") {
		sec := convert[corev1.Secret](t, s)
		data := map[string]string{}
		for k, v := range sec.Data {
			data[k] = string(v)
		}
		secrets[sec.Name] = data
	}
	userEnv := map[string]string{}
	for name, e := range env {
		switch {
		case slices.Contains([]string{"KUBERNETES_NAMESPACE", "RELOADER_NAMESPACE", "RELOADER_DEPLOYMENT_NAME", "POD_NAME", "POD_NAMESPACE"}, name):
		case (name == "GOMAXPROCS" || name == "GOMEMLIMIT") && e.ValueFrom != nil:
			// Reloader's defaults from the limits; Reroll's runtime sizes itself.
		case name == "GOMEMLIMIT" && strings.Trim(e.Value, "0123456789") == "":
			// Reroll's default, in bytes, from the memory limit.
		case e.ValueFrom == nil:
			userEnv[name] = "value " + e.Value
		case e.ValueFrom.FieldRef != nil:
			userEnv[name] = "field " + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if data, rendered := secrets[ref.Name]; rendered {
				userEnv[name] = "rendered Secret " + data[ref.Key]
			} else {
				userEnv[name] = "Secret " + ref.Name + "/" + ref.Key
			}
		}
	}
	out["env"] = userEnv

	// The pod.
	out["serviceAccountName"] = releaseNamed.Replace(pod.ServiceAccountName)
	out["automountServiceAccountToken"] = pod.AutomountServiceAccountToken
	out["imagePullSecrets"] = pod.ImagePullSecrets
	out["nodeSelector"] = pod.NodeSelector
	out["tolerations"] = pod.Tolerations
	out["priorityClassName"] = pod.PriorityClassName
	out["dnsConfig"] = pod.DNSConfig
	out["hostUsers"] = pod.HostUsers
	// Reroll's own defaults (resources, a spread of its replicas) are
	// compared only where Reloader's rendering has the key too. Reloader
	// spreads HA replicas with a podAntiAffinity, Reroll with a
	// topologySpreadConstraint: both over nodes, not compared.
	if len(pod.TopologySpreadConstraints) > 0 {
		out["topologySpreadConstraints"] = pod.TopologySpreadConstraints
	}
	if pod.Affinity != nil && pod.Affinity.NodeAffinity != nil {
		out["nodeAffinity"] = pod.Affinity.NodeAffinity
	}
	out["revisionHistoryLimit"] = d.Spec.RevisionHistoryLimit
	out["pod annotations"] = d.Spec.Template.Annotations
	out["user labels on pods"] = withoutReloaderDefaults(userLabels(d.Spec.Template.Labels))
	out["user labels on the Deployment"] = withoutReloaderDefaults(userLabels(d.Labels))
	out["user annotations on the Deployment"] = withoutHelm(d.Annotations)
	if len(c.Resources.Requests)+len(c.Resources.Limits) > 0 {
		out["resources"] = c.Resources
	}
	out["liveness timings"] = timings(c.LivenessProbe)
	out["readiness timings"] = timings(c.ReadinessProbe)

	// RBAC: where, and what it may read.
	roles := only(objs, "ClusterRole")
	scope := "cluster"
	if len(roles) == 0 {
		scope = "namespaces"
	}
	if len(roles)+len(only(objs, "Role")) == 0 {
		scope = "none"
	}
	out["RBAC scope"] = scope
	// What it may read to watch: the ClusterRole's, or the Roles' in
	// namespace scope, without the Roles each chart has for its own
	// objects (Reloader's meta-info ConfigMap, Reroll's digest key and
	// journals, both by resourceNames or without watch).
	var readable []string
	kinds := []string{"ClusterRole"}
	if scope == "namespaces" {
		kinds = []string{"Role"}
	}
	for _, kind := range kinds {
		for _, r := range only(objs, kind) {
			if strings.HasSuffix(r.GetName(), "-metadata-role") {
				continue
			}
			for _, rule := range convert[rbacv1.ClusterRole](t, r).Rules {
				if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Verbs, "watch") {
					for _, res := range rule.Resources {
						if slices.Contains([]string{"configmaps", "secrets"}, res) && !slices.Contains(readable, res) {
							readable = append(readable, res)
						}
						if res == "namespaces" {
							out["reads namespaces"] = true
						}
					}
				}
			}
		}
	}
	sort.Strings(readable)
	out["readable"] = readable
	subjects := map[string]bool{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range only(objs, kind) {
			for _, s := range convert[rbacv1.RoleBinding](t, b).Subjects {
				subjects[s.Kind+"/"+releaseNamed.Replace(s.Name)] = true
			}
		}
	}
	out["RBAC subjects"] = subjects
	sas := map[string]any{}
	for _, s := range only(objs, "ServiceAccount") {
		sa := convert[corev1.ServiceAccount](t, s)
		sas[sa.Name] = map[string]any{"automount": sa.AutomountServiceAccountToken, "labels": userLabels(sa.Labels), "annotations": withoutHelm(sa.Annotations)}
	}
	out["ServiceAccounts"] = len(sas)
	for _, v := range sas {
		out["ServiceAccount"] = v
	}

	// The monitoring objects, minus names, selectors and ports.
	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		for _, m := range only(objs, kind) {
			spec := m.Object["spec"].(map[string]any)
			endpoints, _ := spec["endpoints"].([]any)
			if endpoints == nil {
				endpoints, _ = spec["podMetricsEndpoints"].([]any)
			}
			ep := map[string]any{}
			for k, v := range endpoints[0].(map[string]any) {
				if !slices.Contains([]string{"port", "targetPort", "path"}, k) {
					ep[k] = v
				}
			}
			out[kind] = map[string]any{
				"namespace": m.GetNamespace(), "endpoint": ep, "labels": userLabels(m.GetLabels()), "annotations": m.GetAnnotations(),
				"targetLabels": spec["targetLabels"], "podTargetLabels": spec["podTargetLabels"],
			}
		}
	}
	for _, s := range only(objs, "Service") {
		svc := convert[corev1.Service](t, s)
		if svc.Name == "r-reloader" || svc.Name == "r-reroll" {
			out["Service"] = map[string]any{"port": svc.Spec.Ports[0].Port, "labels": userLabels(svc.Labels), "annotations": withoutHelm(svc.Annotations),
				"ipFamilyPolicy": svc.Spec.IPFamilyPolicy, "ipFamilies": svc.Spec.IPFamilies}
		}
	}
	for _, p := range only(objs, "NetworkPolicy") {
		spec := p.Object["spec"].(map[string]any)
		ingress := spec["ingress"].([]any)[0].(map[string]any)
		egress := spec["egress"].([]any)
		var ports []any
		for _, e := range egress {
			for _, port := range e.(map[string]any)["ports"].([]any) {
				ports = append(ports, port.(map[string]any)["port"])
			}
		}
		var to []any
		for _, e := range egress {
			if peers, ok := e.(map[string]any)["to"].([]any); ok {
				to = append(to, peers...)
			} else {
				to = append(to, "anywhere")
			}
		}
		out["NetworkPolicy"] = map[string]any{"ingress from": ingress["from"], "egress ports": ports, "egress to": to}
	}
	for _, p := range only(objs, "PodDisruptionBudget") {
		spec := p.Object["spec"].(map[string]any)
		out["PodDisruptionBudget"] = map[string]any{"minAvailable": spec["minAvailable"], "maxUnavailable": spec["maxUnavailable"]}
	}
	for _, v := range only(objs, "VerticalPodAutoscaler") {
		spec := v.Object["spec"].(map[string]any)
		policy := spec["resourcePolicy"].(map[string]any)["containerPolicies"].([]any)[0].(map[string]any)
		delete(policy, "containerName")
		out["VerticalPodAutoscaler"] = map[string]any{"policy": policy, "updatePolicy": spec["updatePolicy"], "recommenders": spec["recommenders"]}
	}
	return out
}

// releaseNamed replaces each chart's full name of release "r" (the
// prefix of the objects it names) with one placeholder.
var releaseNamed = strings.NewReplacer("r-reloader", "<fullname>", "r-reroll", "<fullname>")

// timings are a probe's five timings, with Kubernetes' defaults.
func timings(p *corev1.Probe) []int32 {
	if p == nil {
		return nil
	}
	or := func(v, def int32) int32 {
		if v == 0 {
			return def
		}
		return v
	}
	return []int32{or(p.TimeoutSeconds, 1), or(p.FailureThreshold, 3), or(p.PeriodSeconds, 10), or(p.SuccessThreshold, 1), p.InitialDelaySeconds}
}

// chartLabels are the labels each chart puts on its own objects, with the
// values they have for release "r"; "" is any value.
var chartLabels = map[string][]string{"app": {"r-reloader"}, "release": {"r"}, "chart": {""}, "heritage": {"Helm"}, "helm.sh/chart": {""},
	"app.kubernetes.io/name": {"reloader", "reroll"}, "app.kubernetes.io/instance": {"r"}, "app.kubernetes.io/version": {""},
	"app.kubernetes.io/managed-by": {"Helm"}}

// userLabels drops the charts' own labels; a label of the same key with
// another value (a ServiceMonitor's release: kube-prometheus-stack) stays.
func userLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		values, own := chartLabels[k]
		if !own || !(slices.Contains(values, v) || slices.Contains(values, "")) {
			out[k] = v
		}
	}
	return out
}

// reloaderDefaultLabels are the labels Reloader's values.yaml puts on its
// Deployment and pods; they name Reloader's provider and version, so Reroll
// applies them only when a file writes them.
var reloaderDefaultLabels = map[string]string{"provider": "stakater", "group": "com.stakater.platform", "version": "v1.4.20"}

// withoutReloaderDefaults drops reloaderDefaultLabels at their default
// values.
func withoutReloaderDefaults(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if reloaderDefaultLabels[k] != v {
			out[k] = v
		}
	}
	return out
}

// withoutHelm drops the meta.helm.sh annotations Reloader's chart writes.
func withoutHelm(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if !strings.HasPrefix(k, "meta.helm.sh/") {
			out[k] = v
		}
	}
	return out
}

func lowerSorted(in []string) []string {
	out := []string{}
	for _, v := range in {
		if v = strings.ToLower(strings.TrimSpace(v)); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
