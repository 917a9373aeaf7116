// Package unitonly lets a test package whose TestMain starts the local
// control plane run only its pure tests, without the plane: those declared
// in its *_unit_test.go files. `make test-unit` runs them so with -unit.
//
// The rule it serves (docs/development.md, "Writing tests"): a test that
// needs no control plane lives in a *_unit_test.go file, and a test in such
// a file never touches the plane.
package unitonly

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Suffix ends the name of every file whose tests need no control plane.
const Suffix = "_unit_test.go"

// Flag defines -unit on the default flag set: "run only the tests of the
// *_unit_test.go files, without starting the control plane". Call it in a
// package-level var of the package's suite, before flag.Parse.
func Flag() *bool {
	return flag.Bool("unit", false, "run only the tests of the *"+Suffix+" files, without starting the control plane")
}

// Main runs m's unit tests alone when unit (-unit) is set, after
// flag.Parse: it selects them (Select) in the working directory and returns
// m.Run's exit code and true; 1 when the files cannot be parsed. When unit
// is not set it returns false and runs nothing: the caller starts the plane
// and runs every test.
func Main(m *testing.M, unit bool) (int, bool) {
	if !unit {
		return 0, false
	}
	if _, err := Select("."); err != nil {
		fmt.Fprintln(os.Stderr, "selecting the unit tests:", err)
		return 1, true
	}
	return m.Run(), true
}

// Select sets -test.run so that m.Run runs only the Test and Fuzz functions
// declared in the *_unit_test.go files of dir (the package's directory,
// which `go test` makes the working directory), and returns their names. It
// selects nothing when there are none. An error means a file could not be
// parsed.
func Select(dir string) ([]string, error) {
	names, err := Tests(dir)
	if err != nil {
		return nil, err
	}
	pattern := "^$"
	if len(names) > 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = regexp.QuoteMeta(n)
		}
		pattern = "^(" + strings.Join(quoted, "|") + ")$"
	}
	return names, flag.Set("test.run", pattern)
}

// Tests returns the names of the Test and Fuzz functions declared in the
// *_unit_test.go files of dir, sorted.
func Tests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"+Suffix))
	if err != nil {
		return nil, err
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if n := fn.Name.Name; strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz") {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}
