package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/reroll/reroll/internal/version"
)

// versionReport is `version`'s answer: the plugin's build and the
// controller's.
type versionReport struct {
	Client version.Info `json:"client"`
	// Server is the Reroll controller found in the cluster; nil when none
	// was found or --client.
	Server *serverVersion `json:"server,omitempty"`
	// Warnings say when the plugin's planner may answer differently from
	// the controller's (a version skew), or why the server is unknown.
	Warnings []string `json:"warnings,omitempty"`
}

// serverVersion is the running controller's version, from its image tag.
type serverVersion struct {
	// Deployment is NAMESPACE/NAME.
	Deployment string `json:"deployment"`
	Image      string `json:"image"`
	// Version is the image's tag; "" when the image has none (a digest).
	Version string `json:"version"`
}

func newVersion(o *Options) *cobra.Command {
	var (
		out        *output
		clientOnly bool
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the Reroll controller's, and warn when they differ",
		Example: `  kubectl reroll version
  kubectl reroll version --client
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
			if !clientOnly {
				r.Server, r.Warnings = serverVersionOf(cmd.Context(), o)
				r.Warnings = append(r.Warnings, skew(r.Client.Version, r.Server)...)
			}
			if out.table() {
				fmt.Fprintln(o.Out, "Client: kubectl-reroll", r.Client)
				if r.Server != nil {
					v := r.Server.Version
					if v == "" {
						v = "unknown"
					}
					fmt.Fprintf(o.Out, "Server: %s (Deployment %s, image %s)\n", v, r.Server.Deployment, r.Server.Image)
				}
				for _, w := range r.Warnings {
					fmt.Fprintln(o.ErrOut, "Warning:", w)
				}
				return nil
			}
			return out.print(o.Out, "Version", r)
		},
	}
	out = newOutput(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: json or yaml; lines by default."
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print the plugin's version only; read nothing from the cluster.")
	return cmd
}

// serverVersionOf finds the Reroll controller and returns its version, or
// a warning saying why it is unknown.
func serverVersionOf(ctx context.Context, o *Options) (*serverVersion, []string) {
	s, err := newSession(o)
	if err != nil {
		return nil, []string{fmt.Sprintf("the controller's version is unknown: %v", err)}
	}
	c, err := findController(ctx, s.client, o.RerollNamespace, o.RerollSelector)
	if err != nil {
		return nil, []string{fmt.Sprintf("the controller's version is unknown: %v", err)}
	}
	return &serverVersion{Deployment: c.Namespace + "/" + c.Name, Image: c.Image, Version: c.Version}, nil
}

// skew warns when the plugin and the controller differ in their major or
// minor version: the plugin's answers come from its own copy of the
// planner, which then may not decide as the controller does.
func skew(client string, server *serverVersion) []string {
	if server == nil {
		return nil
	}
	cv, cerr := utilversion.ParseSemantic(client)
	sv, serr := utilversion.ParseSemantic(server.Version)
	switch {
	case serr != nil:
		return []string{fmt.Sprintf("the controller's image %s has no version tag: the plugin (%s) cannot tell whether it decides as the controller does", server.Image, client)}
	case cerr != nil:
		return []string{fmt.Sprintf("this plugin has no release version (%q): it cannot tell whether it decides as the controller (%s) does", client, server.Version)}
	case cv.Major() != sv.Major() || cv.Minor() != sv.Minor():
		return []string{fmt.Sprintf("version skew: the plugin is %s and the controller %s; who-uses, why and plan use the plugin's own planner, which may not decide as the controller does: install kubectl-reroll v%d.%d", client, server.Version, sv.Major(), sv.Minor())}
	}
	return nil
}
