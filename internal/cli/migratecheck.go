package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/reroll/reroll/internal/reloaderchart"
)

// ErrMigrationDiffers is returned by `migrate-check` when Reroll's chart
// would refuse a key of the values file, or not know it; kubectl-reroll
// exits 1 on it.
var ErrMigrationDiffers = errors.New("with this values file, Reroll's chart would not behave as Reloader's")

func newMigrateCheck(o *Options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "migrate-check -f FILE|-",
		Short: "Say, key by key, what Reroll's chart does with a Reloader values file",
		Long: `migrate-check reads a values file of Stakater Reloader's Helm chart (2.2.x)
and prints, for each key it sets, what Reroll's chart does with it:

  same      renders the effect Reloader's chart renders
  mapped    renders the same effect through a Reroll value or behaviour
  refused   helm install fails on it; the line says what to write instead
  unknown   not a key of Reloader's chart

It exits 1 when any key is refused or unknown. It reads no cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := readValuesFile(file, o.In)
			if err != nil {
				return err
			}
			var values map[string]any
			if err := yaml.Unmarshal(b, &values); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			findings := reloaderchart.Check(values)
			if err := printFindings(o.Out, findings); err != nil {
				return err
			}
			if reloaderchart.Differs(findings) {
				return ErrMigrationDiffers
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The Reloader values file; - reads standard input.")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readValuesFile reads path, or in when path is "-".
func readValuesFile(path string, in io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(in)
	}
	return os.ReadFile(path)
}

// printFindings writes one line per finding: key, verdict, detail.
func printFindings(out io.Writer, findings []reloaderchart.Finding) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tVERDICT\tWHAT REROLL DOES")
	for _, f := range findings {
		fmt.Fprintf(w, "%s\t%s\t%s\n", f.Key, f.Verdict, f.Detail)
	}
	return w.Flush()
}
