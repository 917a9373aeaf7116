package cli

import (
	"bytes"
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
		gomega.HavePrefix("reloader.watchGlobaly unknown not a value of Reloader's chart 2.2.x"),
	))
}
