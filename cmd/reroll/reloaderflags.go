package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/reroll/reroll/internal/selector"
)

// reloaderOnlyFlags are flags that some release of Stakater Reloader accepts
// and Reroll does not implement: the `*-auto-by-annotation` names of early
// releases.
// Reroll accepts them, so that a Reloader Deployment's arguments still start
// it, and logs a warning naming each one given (see unimplemented).
var reloaderOnlyFlags = []string{
	"configmap-auto-by-annotation",
	"secret-auto-by-annotation",
}

// addReloaderOnlyFlags binds each of reloaderOnlyFlags to a string in into.
func addReloaderOnlyFlags(fs *pflag.FlagSet, into map[string]*string) {
	for _, name := range reloaderOnlyFlags {
		v := new(string)
		into[name] = v
		fs.StringVar(v, name, "", "Reloader flag that Reroll does not implement: accepted, so that Reloader's arguments start Reroll, and ignored with a warning naming it.")
	}
}

// unimplemented returns the names of the reloaderOnlyFlags given on the
// command line, sorted.
func unimplemented(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(reloaderOnlyFlags, f.Name) {
			out = append(out, "--"+f.Name)
		}
	})
	slices.Sort(out)
	return out
}

// parseSelector parses a label selector flag the way Reloader reads it
// (selector.Parse); the error names the flag.
func parseSelector(flag, value string) (labels.Selector, error) { return selector.Parse(flag, value) }

// unquote trims spaces and one pair of matching surrounding quotes
// (selector.Unquote).
func unquote(s string) string { return selector.Unquote(s) }

// reloaderBool is a switch that Stakater Reloader declares as a string flag
// and reads as on only when its value is exactly "true" (v1.4.21,
// internal/pkg/controller/controller.go compares options.ReloadOnCreate ==
// "true"; internal/pkg/handler/upgrade.go does the same for
// --is-Argo-Rollouts). Being a string, pflag takes its value either after
// "=" or as the next argument ("--reload-on-create true"), and a repeated
// flag keeps the last value.
type reloaderBool struct {
	// value is the flag's value as given; "" when not given.
	value string
}

// newReloaderBool returns b as a pflag.Value.
func newReloaderBool(b *reloaderBool) pflag.Value { return b }

// String returns the value as given.
func (b *reloaderBool) String() string { return b.value }

// Set stores s; every string is accepted, as Reloader accepts it.
func (b *reloaderBool) Set(s string) error {
	b.value = s
	return nil
}

// Type is "string": the type Reloader declares, which makes pflag read a
// separate value.
func (b *reloaderBool) Type() string { return "string" }

// on reports whether the value is exactly "true", Reloader's test.
func (b *reloaderBool) on() bool { return b.value == "true" }

// offReloaderBools returns the reloaderBool flags given a value other than
// "true", "false" or "": Reloader reads them as off, and so does Reroll, but
// a "True" or "1" was probably meant as on, so run warns about each.
func (f *flags) offReloaderBools() []*pflag.Flag {
	var out []*pflag.Flag
	f.set.VisitAll(func(fl *pflag.Flag) {
		if b, ok := fl.Value.(*reloaderBool); ok && b.value != "true" && b.value != "false" && b.value != "" {
			out = append(out, fl)
		}
	})
	return out
}

// reloaderBoolArgs rewrites "--flag true", where flag is a boolean flag, to
// "--flag=true". Reloader's boolean flags (--enable-ha,
// --sync-after-restart, --auto-reload-all, --enable-pprof,
// --enable-csi-integration) are pflag bools under a cobra command that
// ignores stray arguments, so Reloader reads "--enable-ha true" as on and
// drops the "true". Reroll reads it the same way. Reloader also reads
// "--enable-ha false" as on, which its author surely did not mean: that form,
// or any other word after a boolean flag, is an error naming the flag and
// the "=" form to write. Arguments after "--" are left alone.
func reloaderBoolArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, isLong := strings.CutPrefix(a, "--")
		fl := fs.Lookup(name)
		if !isLong || fl == nil || fl.Value.Type() != "bool" || i+1 == len(args) || strings.HasPrefix(args[i+1], "-") {
			out = append(out, a)
			continue
		}
		next := args[i+1]
		if next != "true" {
			return nil, fmt.Errorf("--%s %s: Reloader reads this as --%s=true and drops %q; write --%s=true or --%s=false", name, next, name, next, name, name)
		}
		out = append(out, a+"=true")
		i++
	}
	return out, nil
}
