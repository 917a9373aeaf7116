package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// Rule is why an object was or was not selected to decide a workload's
// rollouts.
type Rule string

// The rules, in Reloader's order of precedence for its and Reroll's
// dialects (annotation.Config.Selects decides; the rule names why).
const (
	// RuleIgnoredKind: --resources-to-ignore drops the whole kind.
	RuleIgnoredKind Rule = "kind ignored (--resources-to-ignore)"
	// RuleIgnoreAnnotation: the object carries the ignore annotation.
	RuleIgnoreAnnotation Rule = "object has the ignore annotation"
	// RuleExcluded: an exclude list of the workload names it.
	RuleExcluded Rule = "excluded by the workload's exclude list"
	// RuleListed: an explicit list of the workload names it.
	RuleListed Rule = "named by the workload's list"
	// RuleSearchMatch: search is on and the object carries match.
	RuleSearchMatch Rule = "search, and the object has the match annotation"
	// RuleNoMatch: search is on and the object lacks match.
	RuleNoMatch Rule = "search, but the object lacks the match annotation"
	// RuleAuto: auto (or --auto-reload-all) selects every reference.
	RuleAuto Rule = "auto"
	// RuleAutoKind: typed auto selects references of its kind.
	RuleAutoKind Rule = "auto for its kind"
	// RuleNotOptedIn: no opt-in of the workload selects the object.
	RuleNotOptedIn Rule = "no opt-in of the workload selects it"
	// RulePodReloader: SAP pod-reloader's list names it; any write counts.
	RulePodReloader Rule = "named by pod-reloader's list (any write counts)"
	// RuleWave: Wave hashes every object the template references and its
	// extra lists name.
	RuleWave Rule = "read by the template or Wave's extra lists"
)

// Considered is one ConfigMap or Secret the planner looked at, and why it
// does or does not decide the workload's rollouts.
type Considered struct {
	// Ref is the reference: from the pod template (keys, containers,
	// optional) or, with Listed, from a list annotation (every key).
	Ref reference.Reference
	// Listed is true when only a list annotation names the object.
	Listed bool
	// Exists is false when the object does not exist (or could not be
	// read, with Unreadable).
	Exists bool
	// Unreadable is true when the Source could not read the object; the
	// decision then treats it as unchanged.
	Unreadable bool
	// Selected is true when the object decides the workload's rollouts.
	Selected bool
	// Rule is why.
	Rule Rule
}

// Reads reports whether a change of key in the object counts for the
// workload: the object is selected and the reference consumes the key (every
// key, for whole-object references and pod-reloader's lists, where any write
// counts).
func (c Considered) Reads(key string) bool {
	return c.Selected && c.Ref.Consumes(key)
}

// selection is what decides one workload's rollouts.
type selection struct {
	// refs are the selected references, sorted by kind, then name.
	refs []reference.Reference
	// data holds each selected reference's digests by ID; nil when the
	// object does not exist.
	data map[string]*digest.Data
	// podReloader holds, in pod-reloader's order, the objects of its hash.
	podReloader []digest.PodReloaderEntry
	// missing names required objects or keys that do not exist (Wave).
	missing []string
	// considered explains every object looked at.
	considered []Considered
	// unreadable names objects or lists the Source could not read.
	unreadable []string
	// refused names references to other namespaces that were not
	// followed ("Secret other/name"; --allow-cross-namespace-references).
	refused []string
	// history holds the History of each object read, by historyKey.
	history map[string]History
}

// WrittenKey is the single pseudo-key of an object in SAP pod-reloader's
// dialect: its digest is that of "<uid>.<resourceVersion>", which any write
// changes.
const WrittenKey = "(uid.resourceVersion)"

// record returns the recorded form of the selection.
func (s selection) record() Record {
	o := make(Record, len(s.refs))
	for _, ref := range s.refs {
		id := ref.ID()
		if d := s.data[id]; d != nil {
			o[id] = observe(ref, d.Keys)
		} else {
			o[id] = nil
		}
	}
	return o
}

// emptySHA1 is Reloader's hash of an object without data, used for a deleted
// object.
var emptySHA1 = digest.ReloaderSHA1OfSecret(nil)

// reloaderSHA1 returns Reloader's hash of a selected object: the SHA-1 of
// nothing when it does not exist.
func (s selection) reloaderSHA1(ref reference.Reference) string {
	if d := s.data[ref.ID()]; d != nil {
		return d.ReloaderSHA1
	}
	return emptySHA1
}

// selector reads objects from a Source for one workload.
type selector struct {
	cfg       annotation.Config
	src       Source
	namespace string
	// allowCross lets Wave's extra lists name other namespaces
	// (--allow-cross-namespace-references).
	allowCross bool
	sel        selection
}

// lookup reads one object; a missing or unreadable one yields nil data.
func (s *selector) lookup(namespace string, kind reference.Kind, name string) (*Object, bool, error) {
	// An ignored kind is not watched, and never read.
	if s.cfg.Ignores(kind) {
		return nil, false, nil
	}
	o, ok, err := s.src.Object(kind, namespace, name)
	if errors.Is(err, ErrUnreadable) {
		ref := reference.Reference{Kind: kind, Name: name}
		if namespace != s.namespace {
			ref.Namespace = namespace
		}
		s.sel.unreadable = append(s.sel.unreadable, ref.ID())
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	if !ok {
		return nil, false, nil
	}
	s.sel.history[historyKey(kind, namespace, name)] = o.History
	return &o, false, nil
}

func annotationsOf(o *Object) map[string]string {
	if o == nil {
		return nil
	}
	return o.Annotations
}

func dataOf(o *Object) *digest.Data {
	if o == nil {
		return nil
	}
	d := o.Data
	if d.Keys == nil {
		// A nil Keys means a missing object to the record.
		d.Keys = map[string]string{}
	}
	return &d
}

// selectReferences selects, in the workload's dialect, the objects that
// decide its rollouts. In Reloader's and Reroll's dialects the references
// are sorted by kind, then name; pod-reloader's and Wave's keep their
// annotation and template order.
func selectReferences(cfg annotation.Config, src Source, namespace string, allowCross bool, optIn annotation.OptIn, template *corev1.PodTemplateSpec) (selection, error) {
	s := &selector{cfg: cfg, src: src, namespace: namespace, allowCross: allowCross, sel: selection{data: map[string]*digest.Data{}, history: map[string]History{}}}
	var err error
	switch optIn.Dialect {
	case annotation.DialectPodReloader:
		err = s.podReloader(optIn)
	case annotation.DialectWave:
		err = s.wave(optIn, template)
	default:
		err = s.reloader(optIn, template)
	}
	if err != nil {
		return selection{}, err
	}
	return s.sel, nil
}

func sortRefs(refs []reference.Reference) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Kind != refs[j].Kind {
			return refs[i].Kind < refs[j].Kind
		}
		return refs[i].Name < refs[j].Name
	})
}

// reloader selects in Reloader's and Reroll's dialects.
func (s *selector) reloader(optIn annotation.OptIn, template *corev1.PodTemplateSpec) error {
	// considered holds the IDs of the references considered, for the
	// lists, made only when the workload has lists (most have none).
	var considered map[string]bool
	listKinds := []reference.Kind{reference.ConfigMap, reference.Secret, reference.SecretProviderClass}
	for _, kind := range listKinds {
		if include, _ := optIn.Lists(kind); !s.cfg.Ignores(kind) && len(include) > 0 {
			considered = map[string]bool{}
		}
	}
	consider := func(ref reference.Reference, listed bool) error {
		id := ref.ID()
		if considered != nil {
			considered[id] = true
		}
		c := Considered{Ref: ref, Listed: listed}
		obj, unreadable, err := s.lookup(s.namespace, ref.Kind, ref.Name)
		if err != nil {
			return err
		}
		c.Exists, c.Unreadable = obj != nil, unreadable
		c.Selected = s.cfg.Selects(optIn, ref.Kind, ref.Name, annotationsOf(obj), !listed)
		c.Rule = s.rule(optIn, ref.Kind, ref.Name, annotationsOf(obj), !listed)
		if c.Selected {
			s.sel.refs = append(s.sel.refs, ref)
			s.sel.data[id] = dataOf(obj)
		}
		s.sel.considered = append(s.sel.considered, c)
		return nil
	}
	for _, ref := range reference.FromPodTemplate(template) {
		if err := consider(ref, false); err != nil {
			return err
		}
	}
	// SecretProviderClasses that Secrets Store CSI Driver volumes mount
	// (--enable-csi-integration); an ignored kind is not even looked at.
	if !s.cfg.Ignores(reference.SecretProviderClass) {
		for _, ref := range reference.SecretProviderClasses(template) {
			if err := consider(ref, false); err != nil {
				return err
			}
		}
	}
	for _, kind := range listKinds {
		include, _ := optIn.Lists(kind)
		if s.cfg.Ignores(kind) || len(include) == 0 {
			continue
		}
		names := include.Names()
		if include.HasPatterns() {
			all, err := s.src.Names(kind, s.namespace)
			switch {
			case errors.Is(err, ErrUnreadable):
				s.sel.unreadable = append(s.sel.unreadable, string(kind)+"s in "+s.namespace)
			case err != nil:
				return fmt.Errorf("listing %ss in %s: %w", kind, s.namespace, err)
			}
			for _, n := range all {
				if include.Matches(n) {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		for _, name := range names {
			ref := reference.Reference{Kind: kind, Name: name, All: true}
			if considered[ref.ID()] {
				continue
			}
			if err := consider(ref, true); err != nil {
				return err
			}
		}
	}
	sortRefs(s.sel.refs)
	return nil
}

// rule names why Selects decided as it did, following its precedence.
func (s *selector) rule(o annotation.OptIn, kind reference.Kind, name string, annotations map[string]string, referenced bool) Rule {
	n := s.cfg.Names
	include, exclude := o.Lists(kind)
	switch {
	case s.cfg.Ignores(kind):
		return RuleIgnoredKind
	case annotation.IsTrue(annotations[n.Ignore]) || annotation.IsTrue(annotations[annotation.Ignore]):
		return RuleIgnoreAnnotation
	case exclude.Matches(name):
		return RuleExcluded
	case include.Matches(name):
		return RuleListed
	case !referenced:
		return RuleNotOptedIn
	case o.Search && (annotation.IsTrue(annotations[n.Match]) || annotation.IsTrue(annotations[annotation.Match])):
		return RuleSearchMatch
	case o.Auto:
		return RuleAuto
	case (kind == reference.ConfigMap && o.AutoConfigMaps) || (kind == reference.Secret && o.AutoSecrets) ||
		(kind == reference.SecretProviderClass && o.AutoSecretProviderClasses):
		return RuleAutoKind
	case o.Search:
		return RuleNoMatch
	}
	return RuleNotOptedIn
}

// podReloader selects the objects SAP pod-reloader's lists name, each
// compared on its "<uid>.<resourceVersion>" (any write counts), and keeps
// them in pod-reloader's order for its hash.
func (s *selector) podReloader(optIn annotation.OptIn) error {
	for _, list := range []struct {
		kind  reference.Kind
		names []string
	}{{reference.ConfigMap, optIn.PodReloaderConfigMaps}, {reference.Secret, optIn.PodReloaderSecrets}} {
		for _, name := range list.names {
			obj, unreadable, err := s.lookup(s.namespace, list.kind, name)
			if err != nil {
				return err
			}
			e := digest.PodReloaderEntry{Kind: strings.ToLower(string(list.kind)), Namespace: s.namespace, Name: name, Exists: obj != nil}
			if obj != nil {
				e.UID, e.ResourceVersion = obj.UID, obj.ResourceVersion
			}
			s.sel.podReloader = append(s.sel.podReloader, e)
			ref := reference.Reference{Kind: list.kind, Name: name, All: true}
			if _, dup := s.sel.data[ref.ID()]; dup {
				continue
			}
			s.sel.refs = append(s.sel.refs, ref)
			s.sel.considered = append(s.sel.considered, Considered{Ref: ref, Listed: true, Exists: obj != nil, Unreadable: unreadable, Selected: true, Rule: RulePodReloader})
			s.sel.data[ref.ID()] = nil
			if obj != nil {
				s.sel.data[ref.ID()] = &digest.Data{
					Keys:         map[string]string{WrittenKey: digest.Value([]byte(obj.UID + "." + obj.ResourceVersion))},
					ReloaderSHA1: obj.Data.ReloaderSHA1,
				}
			}
		}
	}
	return nil
}

// wave selects what Wave hashes (reference.ForWave, plus its extra lists,
// which may name other namespaces), compared on content like Reroll's own
// dialect, and notes the required objects and keys that are missing.
func (s *selector) wave(optIn annotation.OptIn, template *corev1.PodTemplateSpec) error {
	refs := reference.ForWave(template)
	for _, extra := range []struct {
		kind  reference.Kind
		names []types.NamespacedName
	}{{reference.ConfigMap, optIn.WaveExtraConfigMaps}, {reference.Secret, optIn.WaveExtraSecrets}} {
		for _, nn := range extra.names {
			ref := reference.Reference{Kind: extra.kind, Name: nn.Name, All: true}
			if nn.Namespace != "" && nn.Namespace != s.namespace {
				if !s.allowCross {
					// A tenant must not learn of, nor roll on, data in a
					// namespace it may not read: the workload's own
					// namespace is the boundary.
					s.sel.refused = append(s.sel.refused, string(extra.kind)+" "+nn.Namespace+"/"+nn.Name)
					continue
				}
				ref.Namespace = nn.Namespace
			}
			refs = append(refs, ref)
		}
	}
	for _, ref := range refs {
		if _, dup := s.sel.data[ref.ID()]; dup {
			continue
		}
		if s.cfg.Ignores(ref.Kind) {
			// --resources-to-ignore: neither read (Wave's hash reads
			// values from the API server), nor required, nor hashed.
			s.sel.considered = append(s.sel.considered, Considered{Ref: ref, Rule: RuleIgnoredKind})
			continue
		}
		obj, unreadable, err := s.lookup(RefNamespace(ref, s.namespace), ref.Kind, ref.Name)
		if err != nil {
			return err
		}
		s.sel.refs = append(s.sel.refs, ref)
		s.sel.data[ref.ID()] = dataOf(obj)
		s.sel.considered = append(s.sel.considered, Considered{Ref: ref, Exists: obj != nil, Unreadable: unreadable, Selected: true, Rule: RuleWave})
		if ref.Optional || unreadable {
			continue
		}
		if obj == nil {
			s.sel.missing = append(s.sel.missing, ref.ID())
			continue
		}
		for _, k := range ref.Keys {
			if _, ok := obj.Data.Keys[k]; !ok {
				s.sel.missing = append(s.sel.missing, ref.ID()+" key "+k)
			}
		}
	}
	return nil
}

// RefNamespace is the namespace of a reference: its own, or the workload's.
func RefNamespace(ref reference.Reference, workloadNamespace string) string {
	if ref.Namespace != "" {
		return ref.Namespace
	}
	return workloadNamespace
}
