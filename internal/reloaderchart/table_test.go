package reloaderchart

import (
	"os"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

const (
	// chartTable is the table the chart reads; keys.yaml is its copy.
	chartTable = "../../charts/reroll/files/reloader-keys.yaml"
	// chartSchema is the schema Helm validates values with; schema.json is
	// its copy.
	chartSchema = "../../charts/reroll/values.schema.json"
	// reloaderValues is Reloader's values.yaml at v1.4.21 (chart 2.2.15).
	reloaderValues = "../../test/e2e/testdata/reloader-chart/values.yaml"
	// guide holds the generated table between the two markers.
	guide      = "../../docs/migrating-from-reloader.md"
	beginTable = "<!-- reloader-keys: generated from charts/reroll/files/reloader-keys.yaml by `make docs`; do not edit -->\n"
	endTable   = "<!-- reloader-keys end -->\n"
)

// TestKeysYAMLIsTheChartsTable: the copy compiled into the plugin is the
// chart's table. `make docs` (UPDATE_DOCS=1) copies it.
func TestKeysYAMLIsTheChartsTable(t *testing.T) {
	g := gomega.NewWithT(t)
	want, err := os.ReadFile(chartTable)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if os.Getenv("UPDATE_DOCS") == "1" {
		g.Expect(os.WriteFile("keys.yaml", want, 0o644)).To(gomega.Succeed())
		return
	}
	g.Expect(string(keysYAML)).To(gomega.Equal(string(want)), "keys.yaml is stale: run make docs")
}

// TestSchemaJSONIsTheChartsSchema: the copy compiled into the plugin is the
// chart's values.schema.json. `make docs` (UPDATE_DOCS=1) copies it.
func TestSchemaJSONIsTheChartsSchema(t *testing.T) {
	g := gomega.NewWithT(t)
	want, err := os.ReadFile(chartSchema)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if os.Getenv("UPDATE_DOCS") == "1" {
		g.Expect(os.WriteFile("schema.json", want, 0o644)).To(gomega.Succeed())
		return
	}
	g.Expect(string(schemaJSON)).To(gomega.Equal(string(want)), "schema.json is stale: run make docs")
}

// TestMarkdownIsInTheMigrationGuide: the guide's table is generated from
// the table. `make docs` (UPDATE_DOCS=1) rewrites it.
func TestMarkdownIsInTheMigrationGuide(t *testing.T) {
	g := gomega.NewWithT(t)
	b, err := os.ReadFile(guide)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	doc := string(b)
	start, end := strings.Index(doc, beginTable), strings.Index(doc, endTable)
	g.Expect(start).To(gomega.BeNumerically(">=", 0), "marker missing in %s", guide)
	g.Expect(end).To(gomega.BeNumerically(">", start))
	body := doc[start+len(beginTable) : end]
	if os.Getenv("UPDATE_DOCS") == "1" {
		// From the chart's table: keys.yaml may be copied in this same run.
		b, err := os.ReadFile(chartTable)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		rows, err := parseRows(b)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		doc = doc[:start+len(beginTable)] + markdown(rows) + doc[end:]
		g.Expect(os.WriteFile(guide, []byte(doc), 0o644)).To(gomega.Succeed())
		return
	}
	g.Expect(body).To(gomega.Equal(Markdown()), "%s is stale: run make docs", guide)
}

// TestEveryKeyOfReloadersValuesHasARow walks Reloader's values.yaml to its
// leaves (an empty map or list is a leaf) and finds a row for each.
func TestEveryKeyOfReloadersValuesHasARow(t *testing.T) {
	g := gomega.NewWithT(t)
	b, err := os.ReadFile(reloaderValues)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var values map[string]any
	g.Expect(yaml.Unmarshal(b, &values)).To(gomega.Succeed())
	var leaves []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := strings.TrimPrefix(prefix+"."+k, ".")
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(path, sub)
				continue
			}
			leaves = append(leaves, path)
		}
	}
	walk("", values)
	// 96, as counted outside Go: python3 -c 'import yaml; v=yaml.safe_load(open("values.yaml"))
	// n=lambda d: sum(n(x) if isinstance(x, dict) and x else 1 for x in d.values()); print(n(v))'
	g.Expect(leaves).To(gomega.HaveLen(96))
	rows := Rows()
	for _, leaf := range leaves {
		found := false
		for _, r := range rows {
			if leaf == r.Key || strings.HasPrefix(leaf, r.Key+".") {
				found = true
			}
		}
		g.Expect(found).To(gomega.BeTrue(), "no row for %s", leaf)
	}
	for _, r := range rows {
		g.Expect(r.Verdict).To(gomega.BeElementOf(Same, Mapped, Refused), r.Key)
		g.Expect(r.Effect).NotTo(gomega.BeEmpty(), r.Key)
		if r.Verdict == Refused {
			g.Expect(r.Fix).NotTo(gomega.BeEmpty(), r.Key)
			g.Expect(r.Accepted).To(gomega.BeElementOf(Same, Mapped), r.Key)
		}
	}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		// values is a values file.
		values string
		// want are the findings' keys and verdicts.
		want map[string]Verdict
		// differs is whether Reroll would behave differently.
		differs bool
	}{
		"Reloader's defaults are the same": {
			values:  "reloader:\n  reloadStrategy: default\n  watchGlobally: true\n  rbac:\n    enabled: true\n",
			want:    map[string]Verdict{"reloader.reloadStrategy": Same, "reloader.watchGlobally": Same, "reloader.rbac.enabled": Same},
			differs: false,
		},
		"Reloader's own image is mapped to Reroll's": {
			values: "image:\n  name: stakater/reloader\n  repository: ghcr.io/stakater/reloader\n  tag: v1.4.20\n",
			want:   map[string]Verdict{"image.name": Mapped, "image.repository": Mapped, "image.tag": Mapped},
		},
		"a mirror of Reloader's image is mapped to Reroll's image in that mirror": {
			values: "image:\n  repository: 123456789012.dkr.ecr.eu-west-1.amazonaws.com/ghcr/stakater/reloader\n",
			want:   map[string]Verdict{"image.repository": Mapped},
		},
		"a Harbor proxy path ending in reloader is mapped": {
			values: "image:\n  repository: harbor.corp/proxy/reloader\n",
			want:   map[string]Verdict{"image.repository": Mapped},
		},
		"a registry for Reloader's image is mapped": {
			values: "global:\n  imageRegistry: registry.example\n",
			want:   map[string]Verdict{"global.imageRegistry": Mapped},
		},
		"a mirror whose layout cannot be told is refused": {
			values:  "image:\n  repository: harbor.corp/proxy/stakater-reloader\n",
			want:    map[string]Verdict{"image.repository": Refused},
			differs: true,
		},
		"a Reroll repository is accepted": {
			values: "image:\n  repository: registry.example/reroll/reroll\n",
			want:   map[string]Verdict{"image.repository": Mapped},
		},
		"the alert keys of env.secret are the same": {
			values: "reloader:\n  deployment:\n    env:\n      secret:\n        ALERT_ON_RELOAD: \"true\"\n        ALERT_WEBHOOK_URL: https://hooks.example/x\n",
			want:   map[string]Verdict{"reloader.deployment.env.secret": Same},
		},
		"another key of env.secret is refused": {
			values:  "reloader:\n  deployment:\n    env:\n      secret:\n        TOKEN: x\n",
			want:    map[string]Verdict{"reloader.deployment.env.secret": Refused},
			differs: true,
		},
		"empty rbac labels are the same, set ones refused": {
			values:  "reloader:\n  rbac:\n    labels: {team: a}\n  serviceAccount:\n    labels: {}\n",
			want:    map[string]Verdict{"reloader.rbac.labels": Refused, "reloader.serviceAccount.labels": Same},
			differs: true,
		},
		"a misspelt key fails the schema, with its path": {
			values:  "reloader:\n  watchGlobaly: false\n",
			want:    map[string]Verdict{"reloader.watchGlobaly": Invalid},
			differs: true,
		},
		"a misspelt key under a covered key fails the schema, and its siblings keep their verdicts": {
			values:  "reloader:\n  watchGlobally: true\n  deployment:\n    resources:\n      limits: {memory: 256Mi}\n    nodeSelectr: {a: b}\n",
			want:    map[string]Verdict{"reloader.watchGlobally": Same, "reloader.deployment.resources": Mapped, "reloader.deployment.nodeSelectr": Invalid},
			differs: true,
		},
		"a value of the wrong type fails the schema": {
			values:  "reloader:\n  watchGlobally: \"yes\"\n",
			want:    map[string]Verdict{"reloader.watchGlobally": Invalid},
			differs: true,
		},
		"Reroll's own values are accepted": {
			values: "reloader:\n  watchGlobally: true\npodEviction:\n  enabled: true\nprojections:\n  enabled: false\n",
			want:   map[string]Verdict{"reloader.watchGlobally": Same, "podEviction": Reroll, "projections": Reroll},
		},
		"null values count as absent": {
			values: "reloader:\n  deployment:\n    nodeSelector:\n    env:\n      open:\n",
			want:   map[string]Verdict{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			var values map[string]any
			g.Expect(yaml.Unmarshal([]byte(tc.values), &values)).To(gomega.Succeed())
			fs := Check(values)
			got := map[string]Verdict{}
			for _, f := range fs {
				got[f.Key] = f.Verdict
				g.Expect(f.Detail).NotTo(gomega.BeEmpty(), f.Key)
			}
			g.Expect(got).To(gomega.Equal(tc.want))
			g.Expect(Differs(fs)).To(gomega.Equal(tc.differs))
		})
	}
}

// TestSchemaErrors_NeverQuoteTheValue: a schema error names the key and
// what the schema wants, not the value given, which may be a Secret's (a
// values file read from a Helm release).
func TestSchemaErrors_NeverQuoteTheValue(t *testing.T) {
	g := gomega.NewWithT(t)
	var values map[string]any
	g.Expect(yaml.Unmarshal([]byte("delivery:\n  bakeTime: hunter2-s3cr3t\nreplicas: -7\n"), &values)).To(gomega.Succeed())
	fs := SchemaErrors(values)
	keys := map[string]string{}
	for _, f := range fs {
		keys[f.Key] = f.Detail
		g.Expect(f.Verdict).To(gomega.Equal(Invalid))
	}
	// Positive control: both values are refused, each on its key.
	g.Expect(keys).To(gomega.HaveKeyWithValue("delivery.bakeTime", gomega.ContainSubstring("does not match the pattern")))
	g.Expect(keys).To(gomega.HaveKey("replicas"))
	for _, f := range fs {
		g.Expect(f.Detail).NotTo(gomega.ContainSubstring("hunter2"))
		g.Expect(f.Detail).NotTo(gomega.ContainSubstring("-7"))
	}
}
