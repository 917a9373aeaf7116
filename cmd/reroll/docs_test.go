package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/cli"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// foreignFlags are flags of other programs that the docs name in a code span
// of their own, with the program they belong to. A flag a doc names that is
// neither Reroll's, the plugin's nor listed here fails TestDocs_NameOnlyWhatExists.
var foreignFlags = map[string]string{
	"admission-control-config-file": "kube-apiserver",
	"force":                         "helm upgrade",
	"set":                           "helm",
	"server-side":                   "kubectl apply",
	"create-namespace":              "helm install",
	"wait":                          "helm install",
	"dry-run":                       "kubectl",
	"kube-version":                  "helm template",
}

// docFiles returns README.md and docs/*.md, by path relative to the
// repository, with their text.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(repoRoot, "README.md"))
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		out[rel] = string(b)
	}
	return out
}

var (
	fence          = regexp.MustCompile("(?ms)^```.*?^```")
	codeSpan       = regexp.MustCompile("`([^`\n]+)`")
	annotationName = regexp.MustCompile(`(\*\.)?((?:[a-z0-9-]+\.)*(?:reloader\.stakater\.com|reroll\.dev)/[a-z0-9][a-z0-9.-]*[a-z0-9])`)
	// A values key after the words that name one: "chart: `x`", "Helm
	// `x`", "value `x`", "values `x`".
	namedValue = regexp.MustCompile("(?i)(?:chart:?|helm|values?)\\s+`([a-zA-Z][a-zA-Z0-9.]*)(?:=[^`]*)?`")
	dottedKey  = regexp.MustCompile(`^([a-z][a-zA-Z0-9]*(?:\.[a-zA-Z][a-zA-Z0-9]*)+)(?:=.*)?$`)
)

// stringLiterals returns every string constant in the non-test Go files of
// cmd, internal and api: where the code spells an annotation's name.
func stringLiterals(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dir := range []string{"cmd", "internal", "api"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[v] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// pluginFlags returns the names of every flag of kubectl-reroll and its
// commands.
func pluginFlags() map[string]bool {
	out := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, set := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			set.VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.NewCommand(genericiooptions.IOStreams{}))
	return out
}

// hasSchemaPath reports whether path (dotted) names a property of the
// chart's values.schema.json (which also knows Reloader's values), or one
// under an object that takes any property.
func hasSchemaPath(schema map[string]any, path string) bool {
	node := schema
	for _, seg := range strings.Split(path, ".") {
		props, _ := node["properties"].(map[string]any)
		next, ok := props[seg].(map[string]any)
		if !ok {
			extra, set := node["additionalProperties"]
			return set && extra != false && props == nil
		}
		node = next
	}
	return true
}

// hasValuesPath reports whether path (dotted) names a key of values, or a
// key under a map value that is empty or null in values (podAnnotations.x).
func hasValuesPath(values map[string]any, path string) bool {
	var cur any = values
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return cur == nil
		}
		if len(m) == 0 {
			return true
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

// TestDocs_NameOnlyWhatExists fails when README.md or docs/*.md names a
// flag, a reroll.dev/ or reloader.stakater.com/ annotation or a chart
// values key that the code or the chart does not have. Flags are checked
// in code spans that start with the flag or with `reroll`/`kubectl reroll`;
// values keys in code spans of a dotted path whose first part is a
// top-level key of charts/reroll/values.yaml, and after "chart", "Helm" or
// "value".
func TestDocs_NameOnlyWhatExists(t *testing.T) {
	var f flags
	rerollFlags := map[string]bool{}
	newFlagSet(&f).VisitAll(func(fl *pflag.Flag) { rerollFlags[fl.Name] = true })
	plugin := pluginFlags()
	literals := stringLiterals(t)
	literals[rerollv1alpha1.GroupVersion.String()] = true
	raw, err := os.ReadFile(filepath.Join(repoRoot, "charts", "reroll", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(repoRoot, "charts", "reroll", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := yaml.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	inChart := func(path string) bool { return hasValuesPath(values, path) || hasSchemaPath(schema, path) }
	// Positive controls: each check finds what exists.
	if !rerollFlags["enable-pod-eviction"] || !plugin["fail-on-rollout"] || !literals["reroll.dev/observed"] ||
		!literals["configmap.reloader.stakater.com/reload"] || !inChart("podEviction.enabled") || inChart("podEviction.nope") || !inChart("image.name") {
		t.Fatal("the sources of truth are not read")
	}

	counts := map[string]int{}
	docs := docFiles(t)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range docs {
			if !yield(k) {
				return
			}
		}
	}) {
		text := docs[name]
		for _, m := range annotationName.FindAllStringSubmatch(text, -1) {
			if m[1] != "" || strings.Contains(m[2], ".reroll.dev/") {
				continue // a pattern (*.reloader.stakater.com/reload), or an example API group
			}
			counts["annotation"]++
			if !literals[m[2]] {
				t.Errorf("%s names annotation %s, which the code does not have", name, m[2])
			}
		}
		prose := fence.ReplaceAllString(text, "")
		for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
			span := m[1]
			fields := strings.Fields(span)
			if strings.HasPrefix(span, "--") || strings.HasPrefix(span, "reroll ") || strings.HasPrefix(span, "kubectl reroll ") {
				for _, tok := range fields {
					if !strings.HasPrefix(tok, "--") {
						continue
					}
					flag, _, _ := strings.Cut(strings.TrimPrefix(tok, "--"), "=")
					flag = strings.TrimRight(flag, ",.;:)")
					if flag == "" || strings.ContainsAny(flag, "<>*") {
						continue
					}
					counts["flag"]++
					if !rerollFlags[flag] && !plugin[flag] && foreignFlags[flag] == "" {
						t.Errorf("%s names flag --%s, which neither reroll nor kubectl-reroll has (nor foreignFlags)", name, flag)
					}
				}
			}
			if k := dottedKey.FindStringSubmatch(span); k != nil {
				top, _, _ := strings.Cut(k[1], ".")
				if _, ok := values[top]; ok {
					counts["value"]++
					if !inChart(k[1]) {
						t.Errorf("%s names chart value %s, which charts/reroll/values.yaml does not have", name, k[1])
					}
				}
			}
		}
		for _, m := range namedValue.FindAllStringSubmatch(prose, -1) {
			counts["value"]++
			if !inChart(m[1]) {
				t.Errorf("%s names chart value %s, which charts/reroll/values.yaml does not have", name, m[1])
			}
		}
	}
	// The docs name many of each; a parser that finds none is broken.
	for _, what := range []string{"annotation", "flag", "value"} {
		if counts[what] < 10 {
			t.Errorf("found only %d %s names in the docs", counts[what], what)
		}
	}
}

var (
	testName = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	mdLink   = regexp.MustCompile(`\]\(([^()\s]+?\.md)?(#[^()\s]+)?\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	notSlug  = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// slug is GitHub's anchor of a Markdown heading: lower case, punctuation
// (backticks, dots, colons, slashes, ...) dropped, spaces turned into "-".
func slug(h string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
}

// TestDocs_TestsAndLinksExist fails when README.md or docs/*.md cites a Go
// test that does not exist (README's "What Reroll does" backs each point
// with one), or links a Markdown file or section that does not exist.
func TestDocs_TestsAndLinksExist(t *testing.T) {
	tests := map[string]bool{}
	for _, dir := range []string{"cmd", "internal", "test", "hack"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
				tests[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !tests["TestDocs_TestsAndLinksExist"] {
		t.Fatal("the tests are not read")
	}
	docs := docFiles(t)
	anchors := map[string]map[string]bool{}
	for name, text := range docs {
		anchors[name] = map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			anchors[name][slug(strings.TrimSpace(m[1]))] = true
		}
	}
	cited, linked := 0, 0
	for name, text := range docs {
		for _, m := range testName.FindAllStringSubmatch(text, -1) {
			cited++
			if !tests[m[1]] {
				t.Errorf("%s cites %s, which no _test.go defines", name, m[1])
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			target := name
			if m[1] != "" {
				if strings.Contains(m[1], "://") {
					continue
				}
				target = filepath.Clean(filepath.Join(filepath.Dir(name), m[1]))
			}
			linked++
			if _, err := os.Stat(filepath.Join(repoRoot, target)); err != nil {
				t.Errorf("%s links %s, which does not exist", name, target)
				continue
			}
			if a := strings.TrimPrefix(m[2], "#"); a != "" {
				if set, ok := anchors[target]; ok && !set[a] {
					t.Errorf("%s links %s#%s, a section that does not exist", name, target, a)
				}
			}
		}
	}
	if cited < 10 || linked < 10 {
		t.Errorf("found only %d cited tests and %d links", cited, linked)
	}
}
