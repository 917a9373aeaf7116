package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/validate"
)

// ErrInvalidContent is returned by `validate` when an object of the files
// fails a rule, or a rule does not compile (exit 1).
var ErrInvalidContent = errors.New("content fails validation")

// validationReport is validate's answer, for -o json|yaml.
type validationReport struct {
	// Validators are the Validators applied, "namespace/name", from the
	// files and (--cluster-rules) the cluster.
	Validators []string `json:"validators"`
	// Objects are the ConfigMaps and Secrets checked, "namespace/Kind/name".
	Objects []string `json:"objects"`
	// Invalid are the rules that do not compile: nothing was checked
	// against them.
	Invalid []validatorError `json:"invalidValidators,omitempty"`
	// Findings are the failed checks, by object.
	Findings []objectFinding `json:"findings,omitempty"`
	// Summary counts the objects that fail.
	Summary validationSummary `json:"summary"`
}

type validatorError struct {
	Validator string `json:"validator"`
	Rule      string `json:"rule,omitempty"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

type objectFinding struct {
	// Object is "namespace/Kind/name".
	Object string `json:"object"`
	validate.Finding
}

type validationSummary struct {
	Objects int `json:"objects"`
	Failed  int `json:"failed"`
}

func newValidate(o *Options) *cobra.Command {
	var (
		fo           resource.FilenameOptions
		clusterRules bool
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR|- | -k DIR",
		Short: "Check the ConfigMaps and Secrets in the manifests against the Validators' rules, offline",
		Long: `validate reads the manifests, takes the Validators (reroll.dev/v1alpha1) among them, and checks
every ConfigMap and Secret they select, with the same code as Reroll's controller: required and
forbidden keys, sizes, formats (JSON, YAML, TOML, properties, dotenv, PEM, URL), JSON Schemas and
CEL rules. It needs no cluster; with --cluster-rules it also applies the Validators of the
objects' namespaces in the cluster. A Secret's values are never printed.

Exit status 0 when every object passes, 1 when one fails, a rule does not compile, or the
files cannot be read.`,
		Example: `  kubectl reroll validate -f config/
  kustomize build overlays/prod | kubectl reroll validate -f - -o json
  kubectl reroll validate -f app-config.yaml --cluster-rules -n shop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := *out.flags.OutputFormat; f != "" && f != "json" && f != "yaml" {
				return fmt.Errorf("validate prints a table, json or yaml; not -o %s", f)
			}
			if err := fo.RequireFilenameOrKustomize(); err != nil {
				return err
			}
			ns := offlineNamespace(o)
			objects, validators, err := readValidation(o, &fo, ns)
			if err != nil {
				return err
			}
			if clusterRules {
				live, err := clusterValidators(cmd, o, objects)
				if err != nil {
					return err
				}
				validators = append(validators, live...)
			}
			r := checkValidation(cmd, objects, validators, time.Now())
			if out.table() {
				err = r.write(o.Out)
			} else {
				err = out.print(o.Out, "Validation", r)
			}
			if err != nil {
				return err
			}
			if len(r.Invalid) > 0 || r.Summary.Failed > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("%w: %d of %d objects fail, %d rules do not compile",
					ErrInvalidContent, r.Summary.Failed, r.Summary.Objects, len(r.Invalid))}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&fo.Filenames, "filename", "f", nil, "Files, directories or URLs of the manifests; - reads standard input.")
	cmd.Flags().StringVarP(&fo.Kustomize, "kustomize", "k", "", "A kustomization directory to build and read.")
	cmd.Flags().BoolVarP(&fo.Recursive, "recursive", "R", false, "Read the directories of -f recursively.")
	cmd.Flags().BoolVar(&clusterRules, "cluster-rules", false, "Also apply the Validators of the objects' namespaces in the cluster (needs a kubeconfig and list on validators.reroll.dev).")
	out = newOutput(cmd)
	return cmd
}

// readValidation reads the ConfigMaps, Secrets and Validators of the
// manifests (other kinds are skipped); an object without a namespace gets
// namespace, as kubectl apply gives it.
func readValidation(o *Options, fo *resource.FilenameOptions, namespace string) ([]validate.Object, []*rerollv1.Validator, error) {
	infos, err := resource.NewBuilder(o.ConfigFlags).Unstructured().Local().
		FilenameParam(false, fo).Flatten().Do().Infos()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the manifests: %w", err)
	}
	var objects []validate.Object
	var validators []*rerollv1.Validator
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		gvk := u.GroupVersionKind()
		var err error
		switch {
		case gvk.Group == "" && gvk.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err == nil {
				objects = append(objects, validate.FromConfigMap(&cm))
			}
		case gvk.Group == "" && gvk.Kind == "Secret":
			var s corev1.Secret
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err == nil {
				objects = append(objects, validate.FromSecret(&s))
			}
		case gvk.GroupVersion() == rerollv1.GroupVersion && gvk.Kind == "Validator":
			v := &rerollv1.Validator{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err == nil {
				validators = append(validators, v)
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s %s from %s: %w", gvk.Kind, u.GetName(), info.Source, err)
		}
	}
	return objects, validators, nil
}

// clusterValidators lists the Validators of the objects' namespaces.
func clusterValidators(cmd *cobra.Command, o *Options, objects []validate.Object) ([]*rerollv1.Validator, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := rerollv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*rerollv1.Validator
	for _, obj := range objects {
		if seen[obj.Namespace] {
			continue
		}
		seen[obj.Namespace] = true
		var list rerollv1.ValidatorList
		if err := c.List(cmd.Context(), &list, client.InNamespace(obj.Namespace)); err != nil {
			return nil, fmt.Errorf("listing the Validators of namespace %s: %w", obj.Namespace, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// checkValidation compiles validators and checks objects against them.
func checkValidation(cmd *cobra.Command, objects []validate.Object, validators []*rerollv1.Validator, now time.Time) validationReport {
	r := validationReport{Validators: []string{}, Objects: []string{}}
	var compiled []*validate.Validator
	for _, v := range validators {
		r.Validators = append(r.Validators, v.Namespace+"/"+v.Name)
		c, err := validate.Compile(v)
		if err != nil {
			ve := validatorError{Validator: v.Namespace + "/" + v.Name, Reason: validate.CondInvalidRule, Message: err.Error()}
			var ce *validate.CompileError
			if errors.As(err, &ce) {
				ve.Rule, ve.Reason = ce.Rule, ce.Reason
			}
			r.Invalid = append(r.Invalid, ve)
			continue
		}
		compiled = append(compiled, c)
	}
	sort.Slice(objects, func(i, j int) bool { return objectName(objects[i]) < objectName(objects[j]) })
	for _, obj := range objects {
		name := objectName(obj)
		r.Objects = append(r.Objects, name)
		fs := validate.Evaluate(cmd.Context(), compiled, obj, now)
		if len(fs) > 0 {
			r.Summary.Failed++
		}
		for _, f := range fs {
			r.Findings = append(r.Findings, objectFinding{Object: name, Finding: f})
		}
	}
	r.Summary.Objects = len(objects)
	return r
}

func objectName(o validate.Object) string { return o.Namespace + "/" + string(o.Kind) + "/" + o.Name }

// write prints the report as a table of findings and a summary line.
func (r validationReport) write(w io.Writer) error {
	for _, e := range r.Invalid {
		rule := e.Rule
		if rule == "" {
			rule = "-"
		}
		if _, err := fmt.Fprintf(w, "Validator %s does not compile (%s, rule %s): %s\n", e.Validator, e.Reason, rule, e.Message); err != nil {
			return err
		}
	}
	if len(r.Findings) > 0 {
		t := newTable(w, "OBJECT", "VALIDATOR", "RULE", "KEY", "MESSAGE")
		for _, f := range r.Findings {
			key := f.Key
			if key == "" {
				key = "-"
			}
			t.row(f.Object, f.Validator, f.Rule, key, f.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d of %d objects fail, with %d Validators\n", r.Summary.Failed, r.Summary.Objects, len(r.Validators))
	return err
}

// offlineNamespace is the namespace of objects that name none: -n, else
// the kubeconfig's, else "default" (validate needs no kubeconfig).
func offlineNamespace(o *Options) string {
	if o.ConfigFlags.Namespace != nil && *o.ConfigFlags.Namespace != "" {
		return *o.ConfigFlags.Namespace
	}
	if ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}
