package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reroll/reroll/internal/reference"
)

func newWhoUses(o *Options) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:               "who-uses configmap/NAME|secret/NAME",
		ValidArgsFunction: completeKindName(o, objectKindNames...),
		Short:             "List the workloads that read a ConfigMap or Secret, how, which keys, and whether a change of each key rolls them",
		Example: `  kubectl reroll who-uses configmap/app-config -n shop
  kubectl reroll who-uses secret/db-credentials -A -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			kind, name, err := parseObjectArg(args[0])
			if err != nil {
				return err
			}
			s, err := newSession(o)
			if err != nil {
				return err
			}
			r, err := s.whoUses(cmd.Context(), kind, name)
			if err != nil {
				return err
			}
			if err := s.health.verdict(); err != nil {
				return err
			}
			if out.table() {
				return r.write(o.Out, out.wide())
			}
			return out.print(o.Out, "WhoUses", r)
		},
	}
	out = newOutput(cmd)
	return cmd
}

// parseObjectArg reads "configmap/NAME", "cm/NAME", "secret/NAME" and their
// plurals.
func parseObjectArg(arg string) (reference.Kind, string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if ok && name != "" {
		switch strings.ToLower(kind) {
		case "configmap", "configmaps", "cm":
			return reference.ConfigMap, name, nil
		case "secret", "secrets":
			return reference.Secret, name, nil
		}
	}
	return "", "", fmt.Errorf("want configmap/NAME or secret/NAME; got %q", arg)
}

// objectRefs lists the consumers: workloads and Projections.
func (r whoUsesReport) objectRefs() []objectRef {
	out := make([]objectRef, 0, len(r.Consumers))
	for _, c := range r.Consumers {
		out = append(out, c.ref)
	}
	return out
}

// whoUsesReport is who-uses' answer.
type whoUsesReport struct {
	Object string `json:"object"`
	// Namespace is the namespace looked in; "" for every namespace.
	Namespace string     `json:"namespace"`
	Consumers []consumer `json:"consumers"`
	Notes     []string   `json:"notes,omitempty"`
}

// consumer is one workload that reads the object or lists it, or one
// Projection whose sources read it (projectionConsumers).
type consumer struct {
	Workload  string `json:"workload"`
	Namespace string `json:"namespace"`
	OptedIn   bool   `json:"optedIn"`
	Dialect   string `json:"dialect,omitempty"`
	// References are the places that read the object; Via "listed" for an
	// opt-in list that names it.
	References []referenceUse `json:"references"`
	// AllKeys is true when some reference reads every key.
	AllKeys bool `json:"allKeys"`
	// Keys are the object's keys and those the workload reads, each with
	// whether a change of it rolls the workload.
	Keys []keyDecision `json:"keys"`
	// Rolls is "yes" when a change of a consumed key rolls the workload,
	// "no", or "unknown" (the object could not be read).
	Rolls string `json:"rolls"`
	// Rule is the rule that decided.
	Rule string `json:"rule"`
	// ref is the workload, for -o name.
	ref objectRef
}

type referenceUse struct {
	Via       string   `json:"via"`
	Container string   `json:"container,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	Optional  bool     `json:"optional,omitempty"`
}

type keyDecision struct {
	Key      string `json:"key"`
	Consumed bool   `json:"consumed"`
	// Exists is false for a consumed key the object lacks (or when the
	// object could not be read).
	Exists bool   `json:"exists"`
	Rolls  string `json:"rolls"`
}

// whoUses finds the consumers of kind/name in the session's namespace, or
// of the object of that name in each namespace with -A.
func (s *session) whoUses(ctx context.Context, kind reference.Kind, name string) (whoUsesReport, error) {
	r := whoUsesReport{Object: string(kind) + "/" + name, Namespace: s.namespace, Consumers: []consumer{}}
	r.Notes = s.discover(ctx)
	targets, notes, err := s.workloads(ctx, s.namespace)
	if err != nil {
		return r, err
	}
	r.Notes = append(r.Notes, notes...)
	unreadable := map[string]bool{}
	for _, t := range targets {
		c, ok, err := s.consumer(ctx, t, kind, name)
		if err != nil {
			return r, err
		}
		if !ok {
			continue
		}
		if c.Rolls == "unknown" && !unreadable[t.obj.GetNamespace()] {
			unreadable[t.obj.GetNamespace()] = true
			r.Notes = append(r.Notes, fmt.Sprintf("could not read %s/%s in %s (forbidden): its keys, and its ignore and match annotations, are unknown; rolls says unknown where they decide", kind, name, t.obj.GetNamespace()))
		}
		c.ref = s.refOf(t.obj)
		r.Consumers = append(r.Consumers, c)
	}
	projections, notes, err := s.projectionConsumers(ctx, kind, name)
	if err != nil {
		return r, err
	}
	r.Consumers = append(r.Consumers, projections...)
	r.Notes = append(r.Notes, notes...)
	return r, nil
}

// consumer describes t's use of kind/name; false when t neither reads nor
// lists it.
func (s *session) consumer(ctx context.Context, t target, kind reference.Kind, name string) (consumer, bool, error) {
	c := consumer{Workload: t.kind.Name() + "/" + t.obj.GetName(), Namespace: t.obj.GetNamespace(), References: []referenceUse{}, Keys: []keyDecision{}}
	var consumed []string
	for _, src := range reference.SourcesOf(t.template, kind, name) {
		via := string(src.Via)
		if src.Init {
			via += " (init)"
		}
		c.References = append(c.References, referenceUse{Via: via, Container: src.Container, Keys: src.Keys, Optional: src.Optional})
		if src.Keys == nil {
			c.AllKeys = true
		}
		consumed = append(consumed, src.Keys...)
	}
	p, err := s.decide(ctx, t)
	if err != nil {
		return c, false, err
	}
	cand, found := considered(p, string(kind)+"/"+name)
	if found && cand.Listed {
		c.References = append(c.References, referenceUse{Via: "listed"})
		c.AllKeys = true
	}
	if len(c.References) == 0 {
		return c, false, nil
	}
	c.OptedIn = p.OptIn.Enabled()
	if c.OptedIn {
		c.Dialect = string(p.OptIn.Dialect)
	}
	switch {
	case !c.OptedIn:
		c.Rolls, c.Rule = "no", "not opted in"
	case !found:
		c.Rolls, c.Rule = "no", "the workload's opt-in does not consider it"
	case undecided(p.OptIn, cand):
		c.Rolls, c.Rule = "unknown", ruleText(p.OptIn, cand)
	case !cand.Selected:
		c.Rolls, c.Rule = "no", string(cand.Rule)
	default:
		c.Rolls, c.Rule = "yes", string(cand.Rule)
	}
	if reason := s.scope(ctx, t); reason != "" && c.OptedIn {
		c.Rolls, c.Rule = "no", reason
	}
	st := s.objects.live(ctx, objectKey{kind: kind, namespace: t.obj.GetNamespace(), name: name})
	keys := slices.Clone(consumed)
	if st.known {
		for k := range st.data.Keys {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		kd := keyDecision{Key: k, Consumed: c.AllKeys || slices.Contains(consumed, k)}
		_, kd.Exists = st.data.Keys[k]
		switch {
		case c.Rolls != "yes":
			kd.Rolls = c.Rolls
		case cand.Reads(k):
			// Every key of a whole-object reference or of pod-reloader's
			// lists (any write counts), else the keys the template reads.
			kd.Rolls = "yes"
		default:
			kd.Rolls = "no"
		}
		c.Keys = append(c.Keys, kd)
	}
	return c, true, nil
}

// write prints the report as a table; wide adds each key's answer.
func (r whoUsesReport) write(w io.Writer, wide bool) error {
	if len(r.Consumers) == 0 {
		fmt.Fprintf(w, "No workload reads or lists %s.\n", r.Object)
		for _, n := range r.Notes {
			fmt.Fprintf(w, "Note: %s\n", n)
		}
		return nil
	}
	cols := []string{"NAMESPACE", "WORKLOAD", "DIALECT", "REFERENCES", "KEYS", "ROLLS", "RULE"}
	if wide {
		cols = append(cols, "KEYS THAT ROLL", "KEYS THAT DO NOT")
	}
	t := newTable(w, cols...)
	for _, c := range r.Consumers {
		var refs []string
		for _, u := range c.References {
			s := u.Via
			if u.Container != "" {
				s += "(" + u.Container + ")"
			}
			refs = append(refs, s)
		}
		keys := "all"
		if !c.AllKeys {
			var ks []string
			for _, k := range c.Keys {
				if k.Consumed {
					ks = append(ks, k.Key)
				}
			}
			keys = list(ks)
		}
		row := []string{c.Namespace, c.Workload, c.Dialect, list(refs), keys, c.Rolls, c.Rule}
		if wide {
			var yes, no []string
			for _, k := range c.Keys {
				if k.Rolls == "yes" {
					yes = append(yes, k.Key)
				} else {
					no = append(no, k.Key)
				}
			}
			row = append(row, list(yes), list(no))
		}
		t.row(row...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	return nil
}
