package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// Validators are the Validators compiled, "namespace/name", and
	// ClusterValidators, "ClusterValidator/name", from the files and
	// (--cluster-rules) the cluster.
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
	// Notes say what could not be checked, e.g. the namespaces whose labels
	// are unknown, so that ClusterValidators selecting by label were not
	// applied there.
	Notes []string `json:"notes,omitempty"`
}

// validationInput is what validate checks: the objects, the Validators
// and ClusterValidators, and the labels of the objects' namespaces (from
// Namespace objects of the files, or the cluster with --cluster-rules).
type validationInput struct {
	objects           []validate.Object
	validators        []*rerollv1.Validator
	clusterValidators []*rerollv1.ClusterValidator
	// namespaceLabels holds the labels of each namespace known; a
	// namespace missing is unknown.
	namespaceLabels map[string]map[string]string
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
objects' namespaces in the cluster and the cluster's ClusterValidators. A ClusterValidator
(from the files or the cluster) applies to the namespaces its namespaceSelector selects, by
the labels of the Namespace objects in the files or, with --cluster-rules, in the cluster; in a
namespace whose labels are unknown, only one that selects every namespace applies (the
output notes it). A Secret's values are never printed.

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
			in, err := readValidation(o, &fo, ns)
			if err != nil {
				return err
			}
			if clusterRules {
				if err := addClusterRules(cmd, o, &in); err != nil {
					return err
				}
			}
			r := checkValidation(cmd, in, time.Now())
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
	cmd.Flags().BoolVar(&clusterRules, "cluster-rules", false, "Also apply the Validators of the objects' namespaces and the ClusterValidators in the cluster (needs a kubeconfig, list on validators.reroll.dev and clustervalidators.reroll.dev, and get on the objects' namespaces for their labels).")
	out = newOutput(cmd)
	return cmd
}

// readValidation reads the ConfigMaps, Secrets, Validators,
// ClusterValidators and Namespaces of the manifests (other kinds are
// skipped); an object without a namespace gets namespace, as kubectl apply
// gives it.
func readValidation(o *Options, fo *resource.FilenameOptions, namespace string) (validationInput, error) {
	in := validationInput{namespaceLabels: map[string]map[string]string{}}
	infos, err := resource.NewBuilder(o.ConfigFlags).Unstructured().Local().
		FilenameParam(false, fo).Flatten().Do().Infos()
	if err != nil {
		return in, fmt.Errorf("reading the manifests: %w", err)
	}
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		gvk := u.GroupVersionKind()
		clusterScoped := gvk.Group == "" && gvk.Kind == "Namespace" || gvk.GroupVersion() == rerollv1.GroupVersion && gvk.Kind == "ClusterValidator"
		if u.GetNamespace() == "" && !clusterScoped {
			u.SetNamespace(namespace)
		}
		var err error
		switch {
		case gvk.Group == "" && gvk.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err == nil {
				in.objects = append(in.objects, validate.FromConfigMap(&cm))
			}
		case gvk.Group == "" && gvk.Kind == "Secret":
			var s corev1.Secret
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err == nil {
				in.objects = append(in.objects, validate.FromSecret(&s))
			}
		case gvk.Group == "" && gvk.Kind == "Namespace":
			in.namespaceLabels[u.GetName()] = u.GetLabels()
		case gvk.GroupVersion() == rerollv1.GroupVersion && gvk.Kind == "Validator":
			v := &rerollv1.Validator{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err == nil {
				in.validators = append(in.validators, v)
			}
		case gvk.GroupVersion() == rerollv1.GroupVersion && gvk.Kind == "ClusterValidator":
			v := &rerollv1.ClusterValidator{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err == nil {
				in.clusterValidators = append(in.clusterValidators, v)
			}
		}
		if err != nil {
			return in, fmt.Errorf("reading %s %s from %s: %w", gvk.Kind, u.GetName(), info.Source, err)
		}
	}
	return in, nil
}

// addClusterRules adds to in the Validators of the objects' namespaces,
// the ClusterValidators of the cluster, and the labels of the objects'
// namespaces that the files do not hold, read through the kubeconfig. An
// error is the API server's, naming what could not be read (a forbidden
// list or get included: the rules would be incomplete).
func addClusterRules(cmd *cobra.Command, o *Options, in *validationInput) error {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := rerollv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	var cluster rerollv1.ClusterValidatorList
	if err := c.List(cmd.Context(), &cluster); err != nil {
		return fmt.Errorf("listing the ClusterValidators: %w", err)
	}
	for i := range cluster.Items {
		in.clusterValidators = append(in.clusterValidators, &cluster.Items[i])
	}
	seen := map[string]bool{}
	for _, obj := range in.objects {
		if seen[obj.Namespace] {
			continue
		}
		seen[obj.Namespace] = true
		var list rerollv1.ValidatorList
		if err := c.List(cmd.Context(), &list, client.InNamespace(obj.Namespace)); err != nil {
			return fmt.Errorf("listing the Validators of namespace %s: %w", obj.Namespace, err)
		}
		for i := range list.Items {
			in.validators = append(in.validators, &list.Items[i])
		}
		if _, ok := in.namespaceLabels[obj.Namespace]; ok || len(cluster.Items) == 0 {
			continue
		}
		var ns corev1.Namespace
		switch err := c.Get(cmd.Context(), client.ObjectKey{Name: obj.Namespace}, &ns); {
		case err == nil:
			in.namespaceLabels[obj.Namespace] = ns.Labels
		case apierrors.IsNotFound(err):
			// Not created yet: the files' Namespace would say; none.
		default:
			return fmt.Errorf("reading the labels of namespace %s for the ClusterValidators: %w", obj.Namespace, err)
		}
	}
	return nil
}

// checkValidation compiles in's Validators and ClusterValidators and
// checks in's objects against them: a ClusterValidator checks the objects
// of the namespaces its namespaceSelector selects, by
// in.namespaceLabels; in a namespace whose labels are unknown, only one
// whose selector is empty (every namespace), with a note in the report.
func checkValidation(cmd *cobra.Command, in validationInput, now time.Time) validationReport {
	r := validationReport{Validators: []string{}, Objects: []string{}}
	var compiled, clusterWide []*validate.Validator
	bySelector := map[*validate.Validator]bool{}
	invalid := func(name string, err error) {
		ve := validatorError{Validator: name, Reason: validate.CondInvalidRule, Message: err.Error()}
		var ce *validate.CompileError
		if errors.As(err, &ce) {
			ve.Rule, ve.Reason = ce.Rule, ce.Reason
		}
		r.Invalid = append(r.Invalid, ve)
	}
	for _, v := range in.validators {
		r.Validators = append(r.Validators, v.Namespace+"/"+v.Name)
		c, err := validate.Compile(v)
		if err != nil {
			invalid(v.Namespace+"/"+v.Name, err)
			continue
		}
		compiled = append(compiled, c)
	}
	for _, cv := range in.clusterValidators {
		name := validate.ClusterValidatorPrefix + cv.Name
		r.Validators = append(r.Validators, name)
		c, err := validate.CompileCluster(cv)
		if err != nil {
			invalid(name, err)
			continue
		}
		clusterWide = append(clusterWide, c)
		bySelector[c] = len(cv.Spec.NamespaceSelector.MatchLabels) > 0 || len(cv.Spec.NamespaceSelector.MatchExpressions) > 0
	}
	objects := in.objects
	sort.Slice(objects, func(i, j int) bool { return objectName(objects[i]) < objectName(objects[j]) })
	unknown := map[string]bool{}
	for _, obj := range objects {
		name := objectName(obj)
		r.Objects = append(r.Objects, name)
		applied := compiled
		labels, known := in.namespaceLabels[obj.Namespace]
		for _, c := range clusterWide {
			switch {
			case known && c.SelectsNamespace(labels), !known && !bySelector[c]:
				applied = append(applied[:len(applied):len(applied)], c)
			case !known:
				unknown[obj.Namespace] = true
			}
		}
		fs := validate.Evaluate(cmd.Context(), applied, obj, now)
		if len(fs) > 0 {
			r.Summary.Failed++
		}
		for _, f := range fs {
			r.Findings = append(r.Findings, objectFinding{Object: name, Finding: f})
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(unknown)) {
		r.Notes = append(r.Notes, fmt.Sprintf("namespace %s: its labels are unknown (no Namespace object in the files; --cluster-rules reads them from the cluster), so the ClusterValidators that select namespaces by label were not applied there", ns))
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
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "Note: %s\n", n); err != nil {
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
