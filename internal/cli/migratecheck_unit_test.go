package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// migrateCheck runs `kubectl reroll migrate-check` with args and returns
// its output and error.
func migrateCheck(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"migrate-check"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// lines returns the output's lines with their fields joined by one space.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}

func TestMigrateCheck_SaysWhatEachKeyDoes(t *testing.T) {
	g := gomega.NewWithT(t)
	// A realistic Reloader file, one of those the chart test renders with
	// both charts.
	out, err := migrateCheck("-f", "../../test/e2e/testdata/reloader-values/slack-alerts.yaml")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(lines(out)).To(gomega.Equal([]string{
		"KEY VERDICT WHAT REROLL DOES",
		"reloader.deployment.env.secret same a Secret <fullname> with these keys, and env secretKeyRef to each, as Reloader's chart renders them",
		"reloader.reloadOnCreate same --reload-on-create=true",
	}))
}

func TestMigrateCheck_FailsOnAValueThatWouldBehaveDifferently(t *testing.T) {
	g := gomega.NewWithT(t)
	file := filepath.Join(t.TempDir(), "values.yaml")
	g.Expect(os.WriteFile(file, []byte("reloader:\n  watchGlobally: false\n  rbac:\n    labels:\n      team: a\n  watchGlobaly: true\n"), 0o600)).To(gomega.Succeed())
	out, err := migrateCheck("-f", file)
	g.Expect(err).To(gomega.MatchError(ErrMigrationDiffers))
	g.Expect(lines(out)).To(gomega.ContainElements(
		"reloader.rbac.labels refused Reroll's RBAC objects carry the chart's labels only: add yours with a post-renderer, and remove reloader.rbac.labels",
		"reloader.watchGlobally same false: only the release namespace, with a Role there and no ClusterRole",
		"reloader.watchGlobaly invalid helm install fails: not a value of Reroll's chart (a typo, or a value of another chart)",
	))
	g.Expect(ExitCode(err)).To(gomega.Equal(1))
}

func TestMigrateCheck_CatchesATypoUnderACoveredKey(t *testing.T) {
	g := gomega.NewWithT(t)
	file := filepath.Join(t.TempDir(), "values.yaml")
	// Positive control first: the same file without the typo is the same.
	g.Expect(os.WriteFile(file, []byte("reloader:\n  deployment:\n    nodeSelector: {disk: ssd}\n"), 0o600)).To(gomega.Succeed())
	out, err := migrateCheck("-f", file)
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(ExitCode(err)).To(gomega.Equal(0))
	g.Expect(os.WriteFile(file, []byte("reloader:\n  deployment:\n    nodeSelector: {disk: ssd}\n    nodeSelectr: {disk: ssd}\n"), 0o600)).To(gomega.Succeed())
	out, err = migrateCheck("-f", file)
	g.Expect(err).To(gomega.MatchError(ErrMigrationDiffers))
	g.Expect(ExitCode(err)).To(gomega.Equal(1))
	g.Expect(lines(out)).To(gomega.ContainElement(gomega.HavePrefix("reloader.deployment.nodeSelectr invalid helm install fails")))
}

func TestMigrateCheck_AcceptsRerollsOwnValues(t *testing.T) {
	g := gomega.NewWithT(t)
	file := filepath.Join(t.TempDir(), "values.yaml")
	g.Expect(os.WriteFile(file, []byte("reloader:\n  watchGlobally: true\npodEviction:\n  enabled: true\n"), 0o600)).To(gomega.Succeed())
	out, err := migrateCheck("-f", file)
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(lines(out)).To(gomega.ContainElement(gomega.HavePrefix("podEviction reroll a value of Reroll's chart")))
}

func TestMigrateCheck_ExitsTwoWhenItCannotCheck(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "unreadable.yaml")
	if err := os.WriteFile(unreadable, []byte("reloader: {}\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "malformed.yaml")
	if err := os.WriteFile(malformed, []byte("reloader: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		// args are migrate-check's arguments.
		args []string
	}{
		"a file that does not exist": {args: []string{"-f", filepath.Join(dir, "missing.yaml")}},
		"a directory":                {args: []string{"-f", dir}},
		"a file that is not YAML":    {args: []string{"-f", malformed}},
		"no file and no cluster":     {args: nil},
		"an unknown flag":            {args: []string{"-f", malformed, "--nope"}},
	}
	if os.Geteuid() != 0 {
		// root reads a file of mode 0 anyway.
		cases["a file it may not read"] = struct{ args []string }{args: []string{"-f", unreadable}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			_, err := migrateCheck(tc.args...)
			g.Expect(err).To(gomega.HaveOccurred())
			g.Expect(ExitCode(err)).To(gomega.Equal(ExitMigrationError), "%v", err)
		})
	}
}

func TestMigrateCheck_PrintsJSON(t *testing.T) {
	g := gomega.NewWithT(t)
	file := filepath.Join(t.TempDir(), "values.yaml")
	g.Expect(os.WriteFile(file, []byte("reloader:\n  reloadOnCreate: true\n  watchGlobaly: false\n"), 0o600)).To(gomega.Succeed())
	out, err := migrateCheck("-f", file, "-o", "json")
	g.Expect(err).To(gomega.MatchError(ErrMigrationDiffers))
	var doc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Source     string `json:"source"`
		Differs    bool   `json:"differs"`
		Values     []struct {
			Key, Verdict, Detail string
		} `json:"values"`
	}
	g.Expect(json.Unmarshal([]byte(out), &doc)).To(gomega.Succeed(), out)
	g.Expect(doc.APIVersion).To(gomega.Equal(OutputAPIVersion))
	g.Expect(doc.Kind).To(gomega.Equal("MigrationCheck"))
	g.Expect(doc.Source).To(gomega.Equal(file))
	g.Expect(doc.Differs).To(gomega.BeTrue())
	g.Expect(doc.Values).To(gomega.HaveLen(2))
	g.Expect(doc.Values[0].Key).To(gomega.Equal("reloader.reloadOnCreate"))
	g.Expect(doc.Values[0].Verdict).To(gomega.Equal("same"))
	g.Expect(doc.Values[1].Key).To(gomega.Equal("reloader.watchGlobaly"))
	g.Expect(doc.Values[1].Verdict).To(gomega.Equal("invalid"))
}
