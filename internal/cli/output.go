package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// OutputAPIVersion is the apiVersion of the documents -o json|yaml prints,
// so that a CI job can tell the shape it reads.
const OutputAPIVersion = "cli.reroll.dev/v1alpha1"

// output is a command's -o flag: json, yaml, name, jsonpath and
// go-template through cli-runtime's printers, else a table ("" or "wide").
// -o name prints the objects the report lists (objectRefs), one
// "kind.group/name" a line, as kubectl get -o name does.
type output struct {
	flags *genericclioptions.PrintFlags
}

func newOutput(cmd *cobra.Command) *output {
	o := &output{flags: genericclioptions.NewPrintFlags("")}
	o.flags.AddFlags(cmd)
	// -o wide is the table with more columns; the flag's help lists it.
	f := cmd.Flags().Lookup("output")
	f.Usage = "Output format: wide, or one of " + strings.Join(o.flags.AllowedFormats(), ", ") + "; a table by default."
	return o
}

// wide reports -o wide.
func (o *output) wide() bool { return *o.flags.OutputFormat == "wide" }

// table reports whether the table is wanted.
func (o *output) table() bool { f := *o.flags.OutputFormat; return f == "" || f == "wide" }

// validate fails on an unknown -o.
func (o *output) validate() error {
	if o.table() {
		return nil
	}
	_, err := o.flags.ToPrinter()
	return err
}

// objectRef names one Kubernetes object a report lists, for -o name.
type objectRef struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// lister is a report that lists Kubernetes objects.
type lister interface {
	// objectRefs returns the objects the report lists, in its order.
	objectRefs() []objectRef
}

// print writes report, a JSON-encodable struct, as the document kind with
// the printer -o chose; with -o name, the objects report lists (a lister).
func (o *output) print(w io.Writer, kind string, report any) error {
	p, err := o.flags.ToPrinter()
	if err != nil {
		return err
	}
	if *o.flags.OutputFormat == "name" {
		l, ok := report.(lister)
		if !ok {
			return fmt.Errorf("-o name: %s lists no objects", kind)
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("v1")
		list.SetKind("List")
		for _, r := range l.objectRefs() {
			u := unstructured.Unstructured{}
			u.SetGroupVersionKind(r.gvk)
			u.SetNamespace(r.namespace)
			u.SetName(r.name)
			list.Items = append(list.Items, u)
		}
		return p.PrintObj(list, w)
	}
	b, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	u.SetAPIVersion(OutputAPIVersion)
	u.SetKind(kind)
	return p.PrintObj(u, w)
}

// newTable returns kubectl's tab writer with a header row.
func newTable(w io.Writer, columns ...string) *tableWriter {
	t := &tableWriter{w: printers.GetNewTabWriter(w)}
	t.row(columns...)
	return t
}

type tableWriter struct {
	w interface {
		io.Writer
		Flush() error
	}
}

func (t *tableWriter) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}

func (t *tableWriter) flush() error { return t.w.Flush() }

// list joins names for a table cell.
func list(items []string) string { return strings.Join(items, ",") }
