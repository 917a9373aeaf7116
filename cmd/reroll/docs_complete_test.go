package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	// reasonConst is an Event reason constant: `ReasonX = "X"` (or with
	// `const`), spelled as a string literal where it is defined.
	reasonConst = regexp.MustCompile(`(?m)^\s*(?:const\s+)?Reason[A-Za-z]+\s*=\s*"([A-Za-z]+)"`)
	// metricName is a metric the code registers: the Name of
	// prometheus.*Opts, or the first argument of prometheus.NewDesc.
	metricName = regexp.MustCompile(`(?:Name:\s*|prometheus\.NewDesc\(\s*)"((?:reroll|reloader)_[a-z_]+)"`)
	// goVersion is the Go version the README asks for: "Go 1.26+".
	goVersion = regexp.MustCompile(`\bGo (1\.[0-9]+(?:\.[0-9]+)?)\+`)
	// goDirective is go.mod's go line.
	goDirective = regexp.MustCompile(`(?m)^go (1\.[0-9]+(?:\.[0-9]+)?)$`)
)

// sourceMatches returns, by directory relative to the repository, the first
// submatch of re in every non-test Go file under cmd and internal.
func sourceMatches(t *testing.T, re *regexp.Regexp) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[rel] = append(out[rel], m[1])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// tableNames returns the code spans in the table rows of the section of
// text under the heading that starts with head ("## Events"), up to the
// next heading of the same or a higher level (the whole text when head
// is empty); every span of a row's first
// cell when firstCell, else every span of the row.
func tableNames(t *testing.T, text, head string, firstCell bool) map[string]bool {
	t.Helper()
	section := text
	if head != "" {
		var ok bool
		if _, section, ok = strings.Cut(text, "\n"+head); !ok {
			t.Fatalf("no section %q", head)
		}
		level := strings.Count(strings.Fields(head)[0], "#")
		if i := regexp.MustCompile(`\n#{1,` + strconv.Itoa(level) + `} `).FindStringIndex(section); i != nil {
			section = section[:i[0]]
		}
	}
	out := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		if firstCell {
			line = strings.Split(strings.Trim(line, "|"), "|")[0]
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocs_EventsTablesListEveryReason fails when an Event reason constant
// of the code is missing from the Events table of README.md or of
// docs/operations.md (a workload's, a change's, the Job journal's), or, for
// a Projection's, from the tables of docs/projections.md.
func TestDocs_EventsTablesListEveryReason(t *testing.T) {
	found := sourceMatches(t, reasonConst)
	var workload, projection []string
	for dir, reasons := range found {
		if dir == filepath.Join("internal", "projection") {
			projection = append(projection, reasons...)
		} else {
			workload = append(workload, reasons...)
		}
	}
	// Positive control: the reasons are read where they are defined.
	if !slices.Contains(workload, "Rolled") || !slices.Contains(workload, "LegacyJournalEntry") ||
		!slices.Contains(workload, "RolloutStorm") || !slices.Contains(projection, "PruneFailed") {
		t.Fatalf("the reason constants are not read: %v, %v", workload, projection)
	}
	tables := map[string]map[string]bool{
		"README.md":          tableNames(t, readDoc(t, "README.md"), "## Events and logs", true),
		"docs/operations.md": tableNames(t, readDoc(t, "docs/operations.md"), "## Troubleshooting", true),
	}
	for doc, names := range tables {
		for _, r := range workload {
			if !names[r] {
				t.Errorf("%s's Events table does not list the Event reason %s", doc, r)
			}
		}
	}
	names := tableNames(t, readDoc(t, "docs/projections.md"), "", false)
	for _, r := range projection {
		if !names[r] {
			t.Errorf("docs/projections.md's tables do not list the Projection reason %s", r)
		}
	}
}

// TestDocs_MetricsListsEveryMetric fails when a metric the code registers
// (reroll_* and Reloader's reloader_*) is missing from the tables of
// docs/metrics.md.
func TestDocs_MetricsListsEveryMetric(t *testing.T) {
	var metrics []string
	for _, names := range sourceMatches(t, metricName) {
		metrics = append(metrics, names...)
	}
	// Positive control: both spellings of a registration are read.
	if !slices.Contains(metrics, "reroll_rollouts_total") || !slices.Contains(metrics, "reroll_api_requests_total") ||
		!slices.Contains(metrics, "reloader_reload_executed_total") {
		t.Fatalf("the registered metrics are not read: %v", metrics)
	}
	text := readDoc(t, "docs/metrics.md")
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| ") {
			for _, m := range codeSpan.FindAllStringSubmatch(strings.Split(strings.Trim(line, "|"), "|")[0], -1) {
				names[m[1]] = true
			}
		}
	}
	for _, m := range metrics {
		if !names[m] {
			t.Errorf("docs/metrics.md's tables do not list the metric %s", m)
		}
	}
}

// TestDocs_READMEGoVersionIsGoMods fails when the Go version README.md asks
// for ("Go 1.26+") is not the go directive of go.mod, which a build with
// GOTOOLCHAIN=local refuses to go below.
func TestDocs_READMEGoVersionIsGoMods(t *testing.T) {
	m := goDirective.FindStringSubmatch(readDoc(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	want := strings.TrimSuffix(m[1], ".0")
	said := goVersion.FindAllStringSubmatch(readDoc(t, "README.md"), -1)
	if len(said) == 0 {
		t.Fatal(`README.md names no Go version as "Go 1.N+"`)
	}
	for _, s := range said {
		if strings.TrimSuffix(s[1], ".0") != want {
			t.Errorf("README.md asks for Go %s+; go.mod needs %s", s[1], m[1])
		}
	}
}
