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
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// securityModes are the install modes docs/security.md describes under "RBAC
// of each install mode", by their heading: the chart values that make each
// (rendered as release "reroll" in namespace "reroll-system"), the
// Kustomize components that make it from config/default (none: the chart
// only), and whether its table lists everything (base) or what it adds to
// cluster scope.
var securityModes = map[string]struct {
	values     map[string]any
	components []string
	base       bool
}{
	"Cluster scope (default)":  {base: true, components: []string{}},
	"Namespace scope":          {base: true, values: map[string]any{"namespaces": []string{"team-a", "team-b"}}},
	"Restarts by eviction":     {values: map[string]any{"podEviction.enabled": true}, components: []string{"pod-eviction"}},
	"Versioned config":         {values: map[string]any{"versionedConfig.enabled": true}, components: []string{"versioned-config"}},
	"Secrets Store CSI Driver": {values: map[string]any{"csiIntegration.enabled": true}, components: []string{"csi"}},
	"High availability":        {values: map[string]any{"replicas": 2}},
	"Admission webhook":        {values: map[string]any{"webhook.enabled": true}},
	"Projections":              {values: map[string]any{"projections.enabled": true}},
}

var docRow = regexp.MustCompile(`^\| (cluster|watched|own) \|`)

// documentedRBAC parses the tables of docs/security.md's "RBAC of each
// install mode" into permissions per mode heading, each as
// where|group|resource|verb|name ("" name: any).
func documentedRBAC(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	newT(t).Expect(err).NotTo(gomega.HaveOccurred())
	_, section, ok := strings.Cut(string(data), "\n## RBAC of each install mode\n")
	newT(t).Expect(ok).To(gomega.BeTrue(), "docs/security.md has a section \"RBAC of each install mode\"")
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string][]string{}
	mode := ""
	list := func(cell string) []string {
		var items []string
		for _, v := range strings.Split(cell, ",") {
			v = strings.Trim(strings.TrimSpace(v), "`")
			if v == `""` {
				v = ""
			}
			items = append(items, v)
		}
		return items
	}
	for _, line := range strings.Split(section, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			mode = strings.TrimSpace(h)
			out[mode] = nil
			continue
		}
		if !docRow.MatchString(line) {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		newT(t).Expect(len(cells)).To(gomega.BeNumerically(">=", 6), "row %q: where, API group, resources, names, verbs, why", line)
		where := strings.TrimSpace(cells[0])
		group := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if group == `""` {
			group = ""
		}
		names := []string{""}
		if strings.TrimSpace(cells[3]) != "" {
			names = list(cells[3])
		}
		newT(t).Expect(strings.TrimSpace(cells[5])).NotTo(gomega.BeEmpty(), "row %q says why", line)
		for _, res := range list(cells[2]) {
			for _, verb := range list(cells[4]) {
				for _, name := range names {
					out[mode] = append(out[mode], strings.Join([]string{where, group, res, verb, name}, "|"))
				}
			}
		}
	}
	return out
}

// grantedRBAC returns what the rendered objs grant the ServiceAccount sa of
// namespace ns, as where|group|resource|verb|name: "cluster" through a
// ClusterRoleBinding, "own" through a RoleBinding in ns, "watched" through
// one in another namespace (each of which must grant the same).
func grantedRBAC(t *testing.T, objs []*unstructured.Unstructured, sa, ns string) []string {
	t.Helper()
	g := newT(t)
	rules := map[string][]rbacv1.PolicyRule{}
	for _, o := range only(objs, "ClusterRole") {
		rules["ClusterRole//"+o.GetName()] = convert[rbacv1.ClusterRole](t, o).Rules
	}
	for _, o := range only(objs, "Role") {
		rules["Role/"+o.GetNamespace()+"/"+o.GetName()] = convert[rbacv1.Role](t, o).Rules
	}
	type binding struct {
		where, key string
	}
	var bindings []binding
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == ns
		})
	}
	for _, o := range only(objs, "ClusterRoleBinding") {
		b := convert[rbacv1.ClusterRoleBinding](t, o)
		if bound(b.Subjects) {
			bindings = append(bindings, binding{"cluster", "ClusterRole//" + b.RoleRef.Name})
		}
	}
	watched := map[string][]string{}
	for _, o := range only(objs, "RoleBinding") {
		b := convert[rbacv1.RoleBinding](t, o)
		if !bound(b.Subjects) {
			continue
		}
		key := "ClusterRole//" + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			key = "Role/" + b.Namespace + "/" + b.RoleRef.Name
		}
		where := "own"
		if b.Namespace != ns {
			where = "watched:" + b.Namespace
		}
		bindings = append(bindings, binding{where, key})
	}
	var out []string
	for _, b := range bindings {
		rs, ok := rules[b.key]
		g.Expect(ok).To(gomega.BeTrue(), "the rendered objects hold %s, which a binding names", b.key)
		for _, r := range rs {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, grp := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							p := strings.Join([]string{grp, res, v, n}, "|")
							if ns, ok := strings.CutPrefix(b.where, "watched:"); ok {
								watched[ns] = append(watched[ns], p)
								continue
							}
							out = append(out, b.where+"|"+p)
						}
					}
				}
			}
		}
	}
	var first []string
	for ns, ps := range watched {
		sort.Strings(ps)
		ps = slices.Compact(ps)
		if first == nil {
			first = ps
		}
		g.Expect(ps).To(gomega.Equal(first), "every watched namespace gets the same Role (%s)", ns)
	}
	for _, p := range first {
		out = append(out, "watched|"+p)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestSecurityDoc_RBACOfEachInstallMode checks docs/security.md's list of
// every permission of each install mode against the RBAC that the chart
// renders for that mode and, where a Kustomize component makes the same
// mode, against config/default with it: the list is complete and grants
// nothing it does not say.
func TestSecurityDoc_RBACOfEachInstallMode(t *testing.T) {
	t.Parallel()
	documented := documentedRBAC(t)
	headings := slices.Sorted(func(yield func(string) bool) {
		for h := range documented {
			if !yield(h) {
				return
			}
		}
	})
	var want []string
	for h := range securityModes {
		want = append(want, h)
	}
	sort.Strings(want)
	newT(t).Expect(headings).To(gomega.Equal(want), "the modes security.md describes are the modes this test renders")
	base := documented["Cluster scope (default)"]
	newT(t).Expect(base).NotTo(gomega.ContainElement(gomega.ContainSubstring("|pods")), "the default grants no access to pods")
	newT(t).Expect(base).To(gomega.ContainElements("cluster||namespaces|get|", "cluster||namespaces|list|", "cluster||namespaces|watch|"), "the default reads Namespaces")

	for mode, m := range securityModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			expected := slices.Clone(documented[mode])
			g.Expect(expected).NotTo(gomega.BeEmpty(), "a table of permissions under %q", mode)
			if !m.base {
				expected = append(expected, base...)
			}
			sort.Strings(expected)
			expected = slices.Compact(expected)

			args := append([]string{"template", "reroll", chartDir, "--namespace", "reroll-system"}, setFlags(m.values)...)
			out, err := run(helmEnv, helmBin, args...)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(grantedRBAC(t, decodeAll(t, out), "reroll", "reroll-system")).To(gomega.Equal(expected), "the chart with %v", m.values)

			if m.components == nil {
				return
			}
			dir := t.TempDir()
			g.Expect(os.CopyFS(dir, os.DirFS(filepath.Join(root, "config")))).To(gomega.Succeed())
			kustomization := filepath.Join(dir, "default", "kustomization.yaml")
			k, err := os.ReadFile(kustomization)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			if len(m.components) > 0 {
				k = append(k, "components:\n"...)
				for _, c := range m.components {
					k = append(k, "  - ../components/"+c+"\n"...)
				}
			}
			g.Expect(os.WriteFile(kustomization, k, 0o644)).To(gomega.Succeed())
			out, err = run(nil, kubectlBin, "kustomize", filepath.Join(dir, "default"))
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(grantedRBAC(t, decodeAll(t, out), "reroll-controller", "reroll-system")).To(gomega.Equal(expected), "config/default with %v", m.components)
		})
	}
}
