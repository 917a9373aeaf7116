package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reroll/reroll/internal/version"
)

// versionReport is `version`'s answer: the plugin's build.
type versionReport struct {
	Client version.Info `json:"client"`
}

func newVersion(o *Options) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and build date",
		Example: `  kubectl reroll version
  kubectl reroll version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := *out.flags.OutputFormat; f != "" && f != "json" && f != "yaml" {
				return fmt.Errorf("version prints a table, json or yaml; not -o %s", f)
			}
			if err := out.validate(); err != nil {
				return err
			}
			r := versionReport{Client: version.Get()}
			if out.table() {
				_, err := fmt.Fprintln(o.Out, "kubectl-reroll", r.Client)
				return err
			}
			return out.print(o.Out, "Version", r)
		},
	}
	out = newOutput(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: json or yaml; one line by default."
	return cmd
}
