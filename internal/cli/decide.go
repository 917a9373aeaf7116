package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/controller"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// verdict is what Reroll decides for one workload given the objects it
// consumes, and why: the answer every command prints a part of.
type verdict struct {
	optIn    annotation.OptIn
	problems []error
	// candidates are the objects the opt-in considered, selected or not,
	// sorted by kind and name.
	candidates []candidate
	// firstSight is true when the workload has no readable record: Reroll
	// records what it consumes and rolls nothing.
	firstSight bool
	// recordErr says why the record could not be read.
	recordErr error
	// changes are what would roll the workload, sorted by kind and name.
	changes []changeObject
	// held are changes that do not roll, with the reason.
	held []heldChange
	// missing names required objects or keys Wave's dialect waits for.
	missing []string
	// unknown names objects the user could not read; each was counted as
	// Reroll last recorded it.
	unknown []string
}

// rolls reports whether the verdict rolls the workload.
func (v verdict) rolls() bool { return len(v.changes) > 0 && len(v.missing) == 0 }

// candidate is one object the opt-in considered.
type candidate struct {
	ref reference.Reference
	// referenced is true when the pod template reads it (not only a list).
	referenced bool
	selected   bool
	// rule says which rule decided selected.
	rule  string
	state objectState
}

// heldChange is a change that does not roll the workload.
type heldChange struct {
	change changeObject
	reason string
}

// observed is the decoded controller.ObservedAnnotation: reference ID to
// key to the first 16 hex characters of the value's SHA-256 ("" for a
// consumed key that is absent); a nil key map for an object that does not
// exist.
type observed map[string]map[string]string

// writtenKey is the pseudo-key of an object in pod-reloader's dialect,
// whose digest any write changes.
const writtenKey = "(uid.resourceVersion)"

// decide is Reroll's decision for t from the objects s reads (live, or
// plan's manifests laid over them), compared with the record on t.
//
// Until the controller's planner is shared, it follows the controller's
// selection (workload_selection.go) and comparison (workload_state.go)
// rules: Reloader's precedence through annotation.Config.Selects, the
// record's digests, the created/deleted flags.
func (s *session) decide(ctx context.Context, t target) verdict {
	var v verdict
	v.optIn, v.problems = s.annotations.Parse(t.obj.GetAnnotations(), t.template.Annotations)
	if !v.optIn.Enabled() {
		return v
	}
	switch v.optIn.Dialect {
	case annotation.DialectPodReloader:
		v.candidates = s.selectPodReloader(ctx, t, v.optIn)
	case annotation.DialectWave:
		v.candidates, v.missing = s.selectWave(ctx, t, v.optIn)
	default:
		v.candidates = s.selectReferences(ctx, t, v.optIn)
	}
	prev, err := parseObserved(t.obj.GetAnnotations()[controller.ObservedAnnotation])
	v.recordErr = err
	v.firstSight = prev == nil
	cur := observed{}
	for _, c := range v.candidates {
		if !c.selected {
			continue
		}
		id := c.ref.ID()
		if !c.state.known {
			v.unknown = append(v.unknown, id)
			if rec, ok := prev[id]; ok {
				cur[id] = rec
			}
			continue
		}
		if !c.state.exists {
			cur[id] = nil
			continue
		}
		cur[id] = observe(c.ref, c.state.data.Keys)
	}
	if v.firstSight {
		return v
	}
	for _, c := range v.candidates {
		if !c.selected || (!c.state.known && prev[c.ref.ID()] == nil) {
			continue
		}
		ch, ok := diffOne(c.ref, prev, cur)
		if !ok {
			continue
		}
		switch {
		case ch.Created && !s.settings.ReloadOnCreate:
			v.held = append(v.held, heldChange{change: ch, reason: "created: Reroll runs without --reload-on-create"})
		case ch.Deleted && !s.settings.ReloadOnDelete:
			v.held = append(v.held, heldChange{change: ch, reason: "deleted: Reroll runs without --reload-on-delete"})
		default:
			v.changes = append(v.changes, ch)
		}
	}
	return v
}

// selectReferences applies Reloader's and Reroll's opt-in to the pod
// template's references and to the explicit lists.
func (s *session) selectReferences(ctx context.Context, t target, o annotation.OptIn) []candidate {
	ns := t.obj.GetNamespace()
	var out []candidate
	considered := map[string]bool{}
	for _, ref := range reference.FromPodTemplate(t.template) {
		considered[ref.ID()] = true
		out = append(out, s.candidate(ctx, ns, o, ref, true))
	}
	for _, kind := range []reference.Kind{reference.ConfigMap, reference.Secret} {
		include, _ := o.Lists(kind)
		if s.annotations.Ignores(kind) || len(include) == 0 {
			continue
		}
		names := include.Names()
		if include.HasPatterns() {
			// A user who may not list the kind gets the names the list
			// spells out; the patterns' other matches stay unknown.
			all, _ := s.objects.names(ctx, kind, ns)
			for _, n := range all {
				if include.Matches(n) {
					names = append(names, n)
				}
			}
		}
		for _, name := range names {
			ref := reference.Reference{Kind: kind, Name: name, All: true}
			if considered[ref.ID()] {
				continue
			}
			considered[ref.ID()] = true
			out = append(out, s.candidate(ctx, ns, o, ref, false))
		}
	}
	sortCandidates(out)
	return out
}

// candidate decides one object, with the rule that decided.
func (s *session) candidate(ctx context.Context, ns string, o annotation.OptIn, ref reference.Reference, referenced bool) candidate {
	c := candidate{ref: ref, referenced: referenced}
	if s.annotations.Ignores(ref.Kind) {
		c.rule = "ignored: Reroll runs with --resources-to-ignore"
		return c
	}
	c.state = s.objects.get(ctx, objectKey{kind: ref.Kind, namespace: ns, name: ref.Name})
	// An object that could not be read is decided without its
	// annotations, as the planner does, and counted as Reroll last
	// recorded it (see decide); undecided tells whether its ignore or
	// match annotation could change the answer.
	c.selected = s.annotations.Selects(o, ref.Kind, ref.Name, c.state.annotations, referenced)
	c.rule = selectionRule(s.annotations, o, ref.Kind, ref.Name, c.state.annotations, referenced)
	return c
}

// undecided reports whether the candidate's selection depends on
// annotations that could not be read: the ignore annotation can drop a
// selected object, the match annotation select one under search.
func (c candidate) undecided(o annotation.OptIn) bool {
	if c.state.known {
		return false
	}
	return c.selected || (o.Search && c.referenced && strings.HasPrefix(c.rule, "search"))
}

// selectionRule names the rule of annotation.Config.Selects that decides
// one object, in the same order of precedence.
func selectionRule(cfg annotation.Config, o annotation.OptIn, kind reference.Kind, name string, ann map[string]string, referenced bool) string {
	lower := strings.ToLower(string(kind)) + "s"
	switch {
	case annotation.IsTrue(ann[cfg.Names.Ignore]):
		return "ignored: the object has " + cfg.Names.Ignore
	case annotation.IsTrue(ann[annotation.Ignore]):
		return "ignored: the object has " + annotation.Ignore
	}
	include, exclude := o.Lists(kind)
	switch {
	case exclude.Matches(name):
		return "excluded by the workload's exclude list of " + lower
	case include.Matches(name):
		return "listed in the workload's " + lower + " list"
	case !referenced:
		return "not referenced by the pod template"
	case o.Search && (annotation.IsTrue(ann[cfg.Names.Match]) || annotation.IsTrue(ann[annotation.Match])):
		return "search: the object has the match annotation"
	case o.Auto:
		return "auto"
	case kind == reference.ConfigMap && o.AutoConfigMaps, kind == reference.Secret && o.AutoSecrets:
		return "auto for " + lower
	case o.Search:
		return "search: the object lacks the match annotation"
	}
	return "the workload's opt-in does not cover " + lower
}

// selectPodReloader selects SAP pod-reloader's listed objects, each
// compared on its uid and resourceVersion (any write counts).
func (s *session) selectPodReloader(ctx context.Context, t target, o annotation.OptIn) []candidate {
	ns := t.obj.GetNamespace()
	var out []candidate
	seen := map[string]bool{}
	for _, l := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, o.PodReloaderConfigMaps}, {reference.Secret, o.PodReloaderSecrets}} {
		for _, name := range l.names {
			ref := reference.Reference{Kind: l.kind, Name: name, All: true}
			if seen[ref.ID()] {
				continue
			}
			seen[ref.ID()] = true
			st := s.objects.get(ctx, objectKey{kind: l.kind, namespace: ns, name: name})
			if st.exists {
				st.data = digest.Data{Keys: map[string]string{writtenKey: digest.Value([]byte(st.uid + "." + st.resourceVersion))}}
			}
			out = append(out, candidate{ref: ref, selected: true, rule: "listed in pod-reloader's annotation (any write counts)", state: st})
		}
	}
	return out
}

// selectWave selects what Wave hashes, and the required objects and keys
// that are missing.
func (s *session) selectWave(ctx context.Context, t target, o annotation.OptIn) ([]candidate, []string) {
	ns := t.obj.GetNamespace()
	refs := reference.ForWave(t.template)
	for _, nn := range o.WaveExtraConfigMaps {
		refs = append(refs, waveExtra(reference.ConfigMap, nn.Namespace, nn.Name, ns))
	}
	for _, nn := range o.WaveExtraSecrets {
		refs = append(refs, waveExtra(reference.Secret, nn.Namespace, nn.Name, ns))
	}
	var out []candidate
	var missing []string
	seen := map[string]bool{}
	for _, ref := range refs {
		if seen[ref.ID()] {
			continue
		}
		seen[ref.ID()] = true
		objNS := ns
		if ref.Namespace != "" {
			objNS = ref.Namespace
		}
		st := s.objects.get(ctx, objectKey{kind: ref.Kind, namespace: objNS, name: ref.Name})
		out = append(out, candidate{ref: ref, referenced: true, selected: true, rule: "Wave: update-on-config-change", state: st})
		if ref.Optional || !st.known {
			continue
		}
		if !st.exists {
			missing = append(missing, ref.ID())
			continue
		}
		for _, k := range ref.Keys {
			if _, ok := st.data.Keys[k]; !ok {
				missing = append(missing, ref.ID()+" key "+k)
			}
		}
	}
	return out, missing
}

func waveExtra(kind reference.Kind, namespace, name, workloadNS string) reference.Reference {
	ref := reference.Reference{Kind: kind, Name: name, All: true}
	if namespace != "" && namespace != workloadNS {
		ref.Namespace = namespace
	}
	return ref
}

func sortCandidates(cs []candidate) {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].ref.Kind != cs[j].ref.Kind {
			return cs[i].ref.Kind < cs[j].ref.Kind
		}
		return cs[i].ref.Name < cs[j].ref.Name
	})
}

// parseObserved decodes controller.ObservedAnnotation; "" means no record.
func parseObserved(v string) (observed, error) {
	if v == "" {
		return nil, nil
	}
	var o observed
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", controller.ObservedAnnotation, err)
	}
	if o == nil {
		o = observed{}
	}
	return o, nil
}

// observe returns the recorded form of one reference from the full digests
// of the object's keys, as Reroll records it.
func observe(ref reference.Reference, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k, d := range keys {
		if ref.Consumes(k) {
			out[k] = short(d)
		}
	}
	for _, k := range ref.Keys {
		if _, ok := out[k]; !ok {
			out[k] = ""
		}
	}
	return out
}

// short is the recorded length of a digest: 16 hex characters.
func short(d string) string {
	if len(d) > 16 {
		return d[:16]
	}
	return d
}

// diffOne returns the change of one reference from prev to cur; false when
// nothing changed or prev does not hold the reference (it is new to the
// workload, whose pod template change rolls it already).
func diffOne(ref reference.Reference, prev, cur observed) (changeObject, bool) {
	before, had := prev[ref.ID()]
	if !had {
		return changeObject{}, false
	}
	after := cur[ref.ID()]
	o := changeObject{Kind: string(ref.Kind), Namespace: ref.Namespace, Name: ref.Name}
	switch {
	case before == nil && after == nil:
		return o, false
	case before == nil:
		o.Created = true
		return o, true
	case after == nil:
		o.Deleted = true
		return o, true
	}
	var keys []string
	if ref.All {
		for k, d := range before {
			if e, ok := after[k]; !ok || e != d {
				keys = append(keys, k)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				keys = append(keys, k)
			}
		}
	} else {
		for _, k := range ref.Keys {
			if d, ok := before[k]; ok && after[k] != d {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return o, false
	}
	sort.Strings(keys)
	if len(keys) == 1 && keys[0] == writtenKey {
		o.Written = true
		return o, true
	}
	o.Keys = keys
	return o, true
}
