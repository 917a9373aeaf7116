package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reroll/reroll/internal/reloaderchart"
)

// ErrMigrationDiffers is returned by `migrate-check` when Reroll would not
// behave as Reloader with the values file or arguments checked: a key the
// chart refuses, does not know or whose schema fails, or a flag or default
// that differs; kubectl-reroll exits 1 on it.
var ErrMigrationDiffers = errors.New("with these values or arguments, Reroll would not behave as Reloader")

// ExitMigrationError is migrate-check's exit status when it could not
// check at all (an unreadable or malformed file, no Reloader found), as
// kubectl diff exits above 1 when it fails.
const ExitMigrationError = 2

// migrationReport is migrate-check's answer, for -o json|yaml.
type migrationReport struct {
	// Source says what was checked: the file, or the Deployment.
	Source string `json:"source"`
	// Differs is whether Reroll would behave differently (exit 1).
	Differs bool `json:"differs"`
	// Values are the verdicts on the Helm values, Arguments on the
	// container arguments (--from-cluster).
	Values    []reloaderchart.Finding `json:"values,omitempty"`
	Arguments []reloaderchart.Finding `json:"arguments,omitempty"`
}

func newMigrateCheck(o *Options) *cobra.Command {
	var (
		file, deployment string
		fromCluster      bool
		out              *output
	)
	cmd := &cobra.Command{
		Use:   "migrate-check (-f FILE|- | --from-cluster)",
		Short: "Say, key by key, what Reroll does with a Reloader values file or a running Reloader's arguments",
		Long: `migrate-check reads a values file of Stakater Reloader's Helm chart (2.2.x), or with
--from-cluster a running Reloader Deployment (its container arguments, and the values of
the Helm release that installed it), and prints what Reroll does with each:

  same      renders (or does) what Reloader's chart (or binary) does
  mapped    the same effect through a Reroll value or behaviour
  reroll    a value of Reroll's own chart, not of Reloader's: applied as documented
  refused   helm install fails on it, or a default differs; the line says what to write
  invalid   the chart's values.schema.json refuses it (a typo, a wrong type): helm install fails
  unknown   not a key or flag of Reloader's

The whole file is validated against Reroll's chart schema, as helm install does.
Exit status, as kubectl diff: 0 when Reroll behaves the same, 1 when something differs,
2 when the check itself failed (an unreadable file, no Reloader Deployment found).`,
		Example: `  kubectl reroll migrate-check -f reloader-values.yaml
  kubectl reroll migrate-check -f reloader-values.yaml -o json
  kubectl reroll migrate-check --from-cluster -n reloader`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := func() (*migrationReport, error) {
				if f := *out.flags.OutputFormat; f != "" && f != "json" && f != "yaml" {
					return nil, fmt.Errorf("migrate-check prints a table, json or yaml; not -o %s", f)
				}
				if err := out.validate(); err != nil {
					return nil, err
				}
				switch {
				case fromCluster && file != "":
					return nil, errors.New("give -f or --from-cluster, not both")
				case fromCluster:
					return checkCluster(cmd.Context(), o, deployment)
				case file != "":
					return checkFile(file, o.In)
				}
				return nil, errors.New("give -f FILE (a Reloader values file; - reads standard input) or --from-cluster")
			}()
			if err != nil {
				return &exitError{code: ExitMigrationError, err: err}
			}
			if out.table() {
				err = printMigration(o.Out, r)
			} else {
				err = out.print(o.Out, "MigrationCheck", r)
			}
			if err != nil {
				return &exitError{code: ExitMigrationError, err: err}
			}
			if r.Differs {
				return ErrMigrationDiffers
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitMigrationError, err: err}
	})
	out = newOutput(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: json or yaml; a table by default."
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The Reloader values file; - reads standard input.")
	cmd.Flags().BoolVar(&fromCluster, "from-cluster", false, "Check the Reloader Deployment running in the namespace (-n, or every namespace with -A): its container arguments and, when Helm installed it, its release's values.")
	cmd.Flags().StringVar(&deployment, "deployment", "", "With --from-cluster, the name of Reloader's Deployment; by default the one whose container image is Reloader's.")
	return cmd
}

// checkFile checks the values file at path ("-": in).
func checkFile(path string, in io.Reader) (*migrationReport, error) {
	b, err := readValuesFile(path, in)
	if err != nil {
		return nil, fmt.Errorf("reading the values file: %w", err)
	}
	values, err := decodeValues(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fs := reloaderchart.Check(values)
	return &migrationReport{Source: path, Values: fs, Differs: reloaderchart.Differs(fs)}, nil
}

// decodeValues decodes a values file as Helm does: YAML, an object at the
// top (an empty file is no values).
func decodeValues(b []byte) (map[string]any, error) {
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("not a YAML object of values: %w", err)
	}
	if values == nil {
		values = map[string]any{}
	}
	return values, nil
}

// readValuesFile reads path, or in when path is "-".
func readValuesFile(path string, in io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(in)
	}
	return os.ReadFile(path)
}

// isReloaderImage reports whether image is Stakater Reloader's, by its
// repository's last path element ("reloader"), whatever the registry or
// mirror path in front of it.
func isReloaderImage(image string) bool {
	repo := image
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo == "reloader" || strings.HasSuffix(repo, "/reloader")
}

// checkCluster finds Reloader's Deployment (by name, or by its container
// image) in the session's namespace (every namespace with -A), checks its
// container's arguments and, when Helm manages it, the values of its
// release's deployed revision.
func checkCluster(ctx context.Context, o *Options, name string) (*migrationReport, error) {
	s, err := newSession(o)
	if err != nil {
		return nil, err
	}
	var list appsv1.DeploymentList
	var opts []client.ListOption
	if s.namespace != "" {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	if err := s.client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", readError(err))
	}
	var found []appsv1.Deployment
	for _, d := range list.Items {
		if name != "" && d.Name != name {
			continue
		}
		if name != "" || slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return isReloaderImage(c.Image) }) {
			found = append(found, d)
		}
	}
	where := "namespace " + s.namespace
	if s.namespace == "" {
		where = "any namespace"
	}
	switch {
	case len(found) == 0 && name != "":
		return nil, fmt.Errorf("no Deployment %s in %s", name, where)
	case len(found) == 0:
		return nil, fmt.Errorf("no Deployment running Reloader's image (…/reloader) in %s; name it with --deployment", where)
	case len(found) > 1:
		var names []string
		for _, d := range found {
			names = append(names, d.Namespace+"/"+d.Name)
		}
		return nil, fmt.Errorf("several Deployments run Reloader's image (%s): name one with -n and --deployment", strings.Join(names, ", "))
	}
	d := found[0]
	c := d.Spec.Template.Spec.Containers[0]
	for _, cc := range d.Spec.Template.Spec.Containers {
		if isReloaderImage(cc.Image) {
			c = cc
			break
		}
	}
	r := &migrationReport{Source: "Deployment " + d.Namespace + "/" + d.Name}
	// Reloader's image starts /manager; its arguments are the args, or the
	// command's after the binary.
	args := c.Args
	if len(args) == 0 && len(c.Command) > 1 {
		args = c.Command[1:]
	}
	r.Arguments = reloaderchart.CheckArgs(args)
	if release := d.Annotations["meta.helm.sh/release-name"]; release != "" {
		values, err := helmValues(ctx, s.client, d.Namespace, release)
		if err != nil {
			return nil, fmt.Errorf("reading the values of Helm release %s/%s (or check its values file with -f): %w", d.Namespace, release, err)
		}
		r.Values = reloaderchart.Check(values)
	}
	r.Differs = reloaderchart.Differs(r.Values) || reloaderchart.Differs(r.Arguments)
	return r, nil
}

// helmValues returns the values given to the latest deployed revision of
// Helm release name in namespace: the "config" of the release record Helm 3
// keeps in Secret sh.helm.release.v1.<name>.v<revision> (labels owner=helm,
// name, status=deployed), whose data "release" is base64 of gzipped JSON.
func helmValues(ctx context.Context, c client.Client, namespace, name string) (map[string]any, error) {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(namespace),
		client.MatchingLabels{"owner": "helm", "name": name, "status": "deployed"}); err != nil {
		return nil, readError(err)
	}
	var latest *corev1.Secret
	version := -1
	for i := range secrets.Items {
		v, err := strconv.Atoi(secrets.Items[i].Labels["version"])
		if err == nil && v > version {
			latest, version = &secrets.Items[i], v
		}
	}
	if latest == nil {
		return nil, errors.New("no deployed revision found")
	}
	raw, err := base64.StdEncoding.DecodeString(string(latest.Data["release"]))
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", latest.Name, err)
	}
	if len(raw) > 3 && bytes.Equal(raw[:3], []byte{0x1f, 0x8b, 0x08}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("decompressing %s: %w", latest.Name, err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, 64<<20)); err != nil {
			return nil, fmt.Errorf("decompressing %s: %w", latest.Name, err)
		}
	}
	var rel struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(raw, &rel); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", latest.Name, err)
	}
	if rel.Config == nil {
		rel.Config = map[string]any{}
	}
	return rel.Config, nil
}

// printMigration writes one line per finding: key, verdict, detail; for a
// Deployment the arguments first, under their own header.
func printMigration(out io.Writer, r *migrationReport) error {
	fromCluster := strings.HasPrefix(r.Source, "Deployment ")
	if fromCluster {
		t := newTable(out, "ARGUMENT", "VERDICT", "WHAT REROLL DOES")
		for _, f := range r.Arguments {
			t.row(f.Key, string(f.Verdict), f.Detail)
		}
		if err := t.flush(); err != nil {
			return err
		}
		if len(r.Values) == 0 {
			return nil
		}
		fmt.Fprintln(out)
	}
	t := newTable(out, "KEY", "VERDICT", "WHAT REROLL DOES")
	for _, f := range r.Values {
		t.row(f.Key, string(f.Verdict), f.Detail)
	}
	return t.flush()
}
