package annotation

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/reroll/reroll/internal/reference"
)

// Dialect is the annotation family a workload opted in with; it decides the
// trigger Reroll writes, so that a workload Reloader used to roll keeps
// getting exactly Reloader's outputs.
type Dialect string

const (
	// DialectReloader is Reloader's annotations (or --auto-reload-all).
	DialectReloader Dialect = "reloader"
	// DialectReroll is reroll.dev annotations; it wins when both are present.
	DialectReroll Dialect = "reroll"
	// DialectPodReloader is SAP pod-reloader's annotations, when neither
	// Reroll's nor Reloader's opt-in annotations are present.
	DialectPodReloader Dialect = "pod-reloader"
	// DialectWave is Wave's annotations, when no other dialect's opt-in is
	// present.
	DialectWave Dialect = "wave"
)

// Wave's (wave.pusher.com) annotations on a workload's metadata.
const (
	// WaveUpdate: "true" rolls on every ConfigMap and Secret the pod
	// template references, as Wave reads them.
	WaveUpdate = "wave.pusher.com/update-on-config-change"
	// WaveExtraConfigMaps and WaveExtraSecrets list more objects, as "name"
	// or "namespace/name".
	WaveExtraConfigMaps = "wave.pusher.com/extra-configmaps"
	WaveExtraSecrets    = "wave.pusher.com/extra-secrets"
)

// SAP pod-reloader's annotations on a workload's metadata: comma-separated
// names of ConfigMaps and Secrets in the workload's namespace. In this
// dialect any write to a listed object rolls the workload, as pod-reloader
// does.
const (
	PodReloaderConfigMaps = "pod-reloader.cs.sap.com/configmaps"
	PodReloaderSecrets    = "pod-reloader.cs.sap.com/secrets"
)

// Config is how annotations are read: the names in use and the flags that
// change Reloader's precedence rules.
type Config struct {
	// Names are Reloader's annotation names (DefaultNames, or flag overrides).
	Names Names
	// AutoReloadAll treats every workload as auto unless its auto annotation
	// says "false" (--auto-reload-all).
	AutoReloadAll bool
	// IgnoreConfigMaps and IgnoreSecrets drop a whole kind
	// (--resources-to-ignore).
	IgnoreConfigMaps bool
	IgnoreSecrets    bool
	// SecretProviderClasses reads the SecretProviderClasses that Secrets
	// Store CSI Driver volumes mount (--enable-csi-integration); without it
	// that kind is ignored.
	SecretProviderClasses bool
}

// DefaultConfig returns Reloader's defaults: its annotation names, nothing
// ignored, no --auto-reload-all.
func DefaultConfig() Config { return Config{Names: DefaultNames()} }

// OptIn is what a workload asked of Reroll.
type OptIn struct {
	// Dialect is the family of annotations the workload used.
	Dialect Dialect
	// Auto rolls on every referenced ConfigMap and Secret; AutoConfigMaps and
	// AutoSecrets on one kind.
	Auto           bool
	AutoConfigMaps bool
	AutoSecrets    bool
	// Search rolls on referenced objects annotated with Match.
	Search bool
	// ConfigMaps and Secrets are the explicit lists; a listed object rolls
	// the workload even when the pod template does not reference it.
	ConfigMaps List
	Secrets    List
	// ExcludeConfigMaps and ExcludeSecrets never roll the workload.
	ExcludeConfigMaps List
	ExcludeSecrets    List
	// AutoSecretProviderClasses, SecretProviderClasses and
	// ExcludeSecretProviderClasses are the same for the SecretProviderClasses
	// mounted through Secrets Store CSI Driver volumes.
	AutoSecretProviderClasses    bool
	SecretProviderClasses        List
	ExcludeSecretProviderClasses List
	// PausePeriod, when positive, keeps a Deployment paused this long after
	// each rollout Reroll triggers.
	PausePeriod time.Duration
	// PodReloaderConfigMaps and PodReloaderSecrets are pod-reloader's lists,
	// in annotation order (its hash depends on the order); set only in
	// DialectPodReloader.
	PodReloaderConfigMaps []string
	PodReloaderSecrets    []string
	// Wave is set in DialectWave; WaveExtraConfigMaps and WaveExtraSecrets
	// are its extra lists, each entry with Namespace "" for the workload's
	// own namespace.
	Wave                bool
	WaveExtraConfigMaps []types.NamespacedName
	WaveExtraSecrets    []types.NamespacedName

	// meter is the matching budget the lists share.
	meter *meter
}

// MatchBudgetExceeded names the list annotation whose pattern matching
// spent the budget of MaxMatchCost, "" while it lasts. Once it is spent,
// List.Matches answers false for every pattern, so a decision made with the
// lists since then is incomplete and must not be acted on.
func (o OptIn) MatchBudgetExceeded() string { return o.meter.exceeded() }

// Enabled reports whether the workload opted in at all.
func (o OptIn) Enabled() bool {
	return o.Auto || o.AutoConfigMaps || o.AutoSecrets || o.Search || len(o.ConfigMaps) > 0 || len(o.Secrets) > 0 ||
		o.AutoSecretProviderClasses || len(o.SecretProviderClasses) > 0 ||
		len(o.PodReloaderConfigMaps) > 0 || len(o.PodReloaderSecrets) > 0 || o.Wave
}

// Lists returns the explicit and exclude lists for one kind.
func (o OptIn) Lists(kind reference.Kind) (include, exclude List) {
	switch kind {
	case reference.Secret:
		return o.Secrets, o.ExcludeSecrets
	case reference.SecretProviderClass:
		return o.SecretProviderClasses, o.ExcludeSecretProviderClasses
	}
	return o.ConfigMaps, o.ExcludeConfigMaps
}

// optInKeys are the annotations whose presence on the workload's metadata
// makes Parse ignore the pod template's.
func (c Config) optInKeys() []string {
	n := c.Names
	return []string{n.Auto, n.ConfigMapAuto, n.SecretAuto, n.ConfigMapReload, n.SecretReload, n.Search,
		n.SecretProviderClassAuto, n.SecretProviderClassReload,
		Auto, AutoConfigMaps, AutoSecrets, ConfigMaps, Secrets, Search, AutoSecretProviderClasses, SecretProviderClasses}
}

var rerollKeys = []string{Auto, AutoConfigMaps, AutoSecrets, ConfigMaps, Secrets, Search, ExcludeConfigMaps, ExcludeSecrets, PausePeriod,
	AutoSecretProviderClasses, SecretProviderClasses, ExcludeSecretProviderClasses}

// Parse reads a workload's annotations. The opt-in annotations (auto, typed
// auto, lists, search) come from the workload's metadata or, when none of
// them is set there, from its pod template; exclude lists and the pause
// period come from the metadata, else the pod template. Malformed values are
// returned as errors, one per annotation or list entry, each naming the
// annotation and the value; everything else still applies (a bad boolean
// counts as unset, a bad list entry is dropped), so one typo never disables
// the rest.
func (c Config) Parse(workload, template map[string]string) (OptIn, []error) {
	p := parser{meter: &meter{left: MaxMatchCost}}
	source := workload
	if !hasAny(workload, c.optInKeys()) {
		source = template
	}
	either := func(key string) map[string]string {
		if _, ok := workload[key]; ok {
			return workload
		}
		return template
	}
	n := c.Names
	o := OptIn{Dialect: DialectReloader}
	if hasAny(workload, rerollKeys) || hasAny(template, rerollKeys) {
		o.Dialect = DialectReroll
	}

	autoSet := false
	for _, key := range []string{n.Auto, Auto} {
		if v, ok := p.boolean(source, key); ok {
			autoSet = true
			o.Auto = o.Auto || v
		}
	}
	// --auto-reload-all spares workloads that say auto "false", as Reloader does.
	if c.AutoReloadAll && !autoSet {
		o.Auto = true
	}
	o.AutoConfigMaps = p.anyTrue(source, n.ConfigMapAuto, AutoConfigMaps)
	o.AutoSecrets = p.anyTrue(source, n.SecretAuto, AutoSecrets)
	o.Search = p.anyTrue(source, n.Search, Search)
	o.ConfigMaps = append(p.list(source, n.ConfigMapReload, true), p.list(source, ConfigMaps, false)...)
	o.Secrets = append(p.list(source, n.SecretReload, true), p.list(source, Secrets, false)...)
	o.ExcludeConfigMaps = append(p.list(either(ReloaderExcludeConfigMaps), ReloaderExcludeConfigMaps, true), p.list(either(ExcludeConfigMaps), ExcludeConfigMaps, false)...)
	o.ExcludeSecrets = append(p.list(either(ReloaderExcludeSecrets), ReloaderExcludeSecrets, true), p.list(either(ExcludeSecrets), ExcludeSecrets, false)...)
	o.AutoSecretProviderClasses = p.anyTrue(source, n.SecretProviderClassAuto, AutoSecretProviderClasses)
	o.SecretProviderClasses = append(p.list(source, n.SecretProviderClassReload, true), p.list(source, SecretProviderClasses, false)...)
	o.ExcludeSecretProviderClasses = append(p.list(either(ReloaderExcludeSecretProviderClasses), ReloaderExcludeSecretProviderClasses, true),
		p.list(either(ExcludeSecretProviderClasses), ExcludeSecretProviderClasses, false)...)
	for _, key := range []string{n.PausePeriod, PausePeriod} {
		v, ok := either(key)[key]
		if !ok {
			continue
		}
		if len(v) > maxScalarLength {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: value of %d bytes is longer than the limit of %d", key, len(v), maxScalarLength))
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: value %q is not a positive duration (want e.g. \"5m\" or \"30s\")", key, v))
			continue
		}
		if d > MaxPausePeriod {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: %s is longer than the limit of %s", key, d, MaxPausePeriod))
			continue
		}
		o.PausePeriod = d
	}
	if o.Dialect == DialectReloader && !o.Enabled() && hasAny(workload, []string{PodReloaderConfigMaps, PodReloaderSecrets}) {
		o.Dialect = DialectPodReloader
		o.PodReloaderConfigMaps = p.ordered(workload, PodReloaderConfigMaps)
		o.PodReloaderSecrets = p.ordered(workload, PodReloaderSecrets)
	}
	if o.Dialect == DialectReloader && !o.Enabled() {
		if wave, _ := p.boolean(workload, WaveUpdate); wave {
			o.Dialect, o.Wave = DialectWave, true
			o.WaveExtraConfigMaps = p.namespaced(workload, WaveExtraConfigMaps)
			o.WaveExtraSecrets = p.namespaced(workload, WaveExtraSecrets)
		}
	}
	o.meter = p.meter
	return o, p.errs
}

// namespaced parses a comma-separated list of "name" or "namespace/name"
// entries; invalid ones are reported and dropped.
func (p *parser) namespaced(annotations map[string]string, key string) []types.NamespacedName {
	var out []types.NamespacedName
	for _, entry := range p.entries(annotations, key) {
		nn := types.NamespacedName{Name: entry}
		if ns, name, ok := strings.Cut(entry, "/"); ok {
			nn = types.NamespacedName{Namespace: ns, Name: name}
		}
		problems := validation.IsDNS1123Subdomain(nn.Name)
		if nn.Namespace != "" {
			problems = append(problems, validation.IsDNS1123Label(nn.Namespace)...)
		}
		if len(problems) > 0 {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: entry %q is not a valid name or namespace/name: %s", key, entry, strings.Join(problems, "; ")))
			continue
		}
		out = append(out, nn)
	}
	return out
}

// ordered parses a comma-separated list of object names, keeping the order
// and duplicates as written; invalid names are reported and dropped.
func (p *parser) ordered(annotations map[string]string, key string) []string {
	var out []string
	for _, entry := range p.entries(annotations, key) {
		if problems := validation.IsDNS1123Subdomain(entry); len(problems) > 0 {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: entry %q is not a valid object name: %s", key, entry, strings.Join(problems, "; ")))
			continue
		}
		out = append(out, entry)
	}
	return out
}

// Selects decides whether one ConfigMap or Secret decides the workload's
// rollouts, with Reloader's precedence: a kind ignored by
// --resources-to-ignore, then the object's ignore annotation, then the
// exclude lists, then the explicit lists (which select the object even when
// the pod template does not reference it), then search with the object's
// match annotation, then auto (typed auto, --auto-reload-all). annotations
// are the object's (nil when it does not exist); referenced says whether the
// pod template references it.
func (c Config) Selects(o OptIn, kind reference.Kind, name string, annotations map[string]string, referenced bool) bool {
	if c.Ignores(kind) {
		return false
	}
	if IsTrue(annotations[c.Names.Ignore]) || IsTrue(annotations[Ignore]) {
		return false
	}
	include, exclude := o.Lists(kind)
	if exclude.Matches(name) {
		return false
	}
	if include.Matches(name) {
		return true
	}
	if !referenced {
		return false
	}
	if o.Search && (IsTrue(annotations[c.Names.Match]) || IsTrue(annotations[Match])) {
		return true
	}
	return o.Auto || (kind == reference.ConfigMap && o.AutoConfigMaps) || (kind == reference.Secret && o.AutoSecrets) ||
		(kind == reference.SecretProviderClass && o.AutoSecretProviderClasses)
}

// Ignores reports whether --resources-to-ignore drops the kind, or, for
// SecretProviderClasses, whether --enable-csi-integration is off.
func (c Config) Ignores(kind reference.Kind) bool {
	return (kind == reference.ConfigMap && c.IgnoreConfigMaps) || (kind == reference.Secret && c.IgnoreSecrets) ||
		(kind == reference.SecretProviderClass && !c.SecretProviderClasses)
}

// SelectionKeys are the annotations of a ConfigMap or Secret that Selects
// reads; a change to them alone can change a workload's rollouts.
func (c Config) SelectionKeys() []string {
	return []string{c.Names.Ignore, Ignore, c.Names.Match, Match}
}

// IsTrue reports whether an annotation value is a true boolean ("true",
// "True", "1", ...; strconv.ParseBool).
func IsTrue(v string) bool {
	// ParseBool's true values, without the error it builds for every
	// other value (IsTrue runs on each decision, mostly on "").
	switch strings.TrimSpace(v) {
	case "1", "t", "T", "TRUE", "true", "True":
		return true
	}
	return false
}

// List is a parsed list annotation.
type List []Pattern

// Pattern is one entry of a list: an exact name (Reroll's lists), or a
// regular expression anchored at both ends (Reloader's).
type Pattern struct {
	// Text is the entry as written.
	Text string
	// Name is true when Text is also a valid object name, so that the entry
	// names one object even before it exists.
	Name bool
	// re matches other names too; nil for an exact name.
	re *regexp.Regexp
	// insts is re's instruction count; annotation is the list's annotation;
	// meter is the matching budget of the Parse that made the list.
	insts      int
	annotation string
	meter      *meter
}

// Matches reports whether any entry matches name. Each match of a pattern
// entry is charged to the budget of the Parse that made the list
// (MaxMatchCost); once that is spent, patterns match nothing, and
// OptIn.MatchBudgetExceeded says so: a caller must then not act on the
// result.
func (l List) Matches(name string) bool {
	for _, p := range l {
		if p.Text == name {
			return true
		}
		if p.re != nil && p.meter.charge(p.annotation, int64(p.insts)*int64(len(name)+1)) && p.re.MatchString(name) {
			return true
		}
	}
	return false
}

// Names returns the entries that are object names, sorted and unique.
func (l List) Names() []string {
	var out []string
	for _, p := range l {
		if p.Name {
			out = append(out, p.Text)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HasPatterns reports whether some entry can match objects other than the
// one it names, so the list must be checked against every object.
func (l List) HasPatterns() bool {
	for _, p := range l {
		if p.re != nil {
			return true
		}
	}
	return false
}

type parser struct {
	errs []error
	// meter is the matching budget of every list parsed.
	meter *meter
}

// boolean reads a boolean annotation; set is false when it is absent or
// malformed (which is recorded as an error).
func (p *parser) boolean(annotations map[string]string, key string) (value, set bool) {
	v, ok := annotations[key]
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("annotation %s: value %q is not a boolean (want \"true\" or \"false\")", key, v))
		return false, false
	}
	return b, true
}

func (p *parser) anyTrue(annotations map[string]string, keys ...string) bool {
	out := false
	for _, k := range keys {
		v, _ := p.boolean(annotations, k)
		out = out || v
	}
	return out
}

// list parses a comma-separated list. With regex, each entry is a regular
// expression anchored at both ends (Reloader's lists); otherwise an exact
// object name (Reroll's).
func (p *parser) list(annotations map[string]string, key string, regex bool) List {
	var out List
	for _, entry := range p.entries(annotations, key) {
		problems := validation.IsDNS1123Subdomain(entry)
		if !regex {
			if len(problems) > 0 {
				p.errs = append(p.errs, fmt.Errorf("annotation %s: entry %q is not a valid object name: %s", key, entry, strings.Join(problems, "; ")))
				continue
			}
			out = append(out, Pattern{Text: entry, Name: true})
			continue
		}
		re, insts, err := compile(entry)
		if errors.Is(err, errTooCostly) {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: entry %q is refused as a regular expression: %w", key, truncate(entry), err))
			continue
		}
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: entry %q is not a valid regular expression: %w", key, truncate(entry), err))
			continue
		}
		pat := Pattern{Text: entry, Name: len(problems) == 0, insts: insts, annotation: key, meter: p.meter}
		// A valid name without "." matches only itself; anything else, a "."
		// included, is a pattern.
		if !pat.Name || strings.Contains(entry, ".") {
			pat.re = re
		}
		out = append(out, pat)
	}
	return out
}

// Limits on list annotations, so that a workload's annotations cannot make
// every reconcile of it expensive. A list value longer than MaxListLength
// bytes is ignored whole (with an error); entries past MaxListEntries are
// dropped (with an error). Kubernetes allows 256 KiB of annotations per
// object; real lists are a few names long.
const (
	// MaxListLength is the longest list annotation value read, in bytes.
	MaxListLength = 4096
	// MaxListEntries is the most entries read from one list annotation.
	MaxListEntries = 64
)

// MaxPausePeriod is the longest pause period a workload's annotation may
// ask for: a pause keeps a Deployment from rolling at all, so a tenant's
// "2562047h" (292 years) is refused, with a Warning, rather than obeyed.
const MaxPausePeriod = 24 * time.Hour

// maxScalarLength is the longest value read from an annotation holding one
// boolean or duration.
const maxScalarLength = 64

// entries splits a comma-separated list annotation into its trimmed,
// non-empty entries, within MaxListLength and MaxListEntries.
func (p *parser) entries(annotations map[string]string, key string) []string {
	v := annotations[key]
	if v == "" {
		// Absent, mostly: no split of it (a slice per list per decision).
		return nil
	}
	if len(v) > MaxListLength {
		p.errs = append(p.errs, fmt.Errorf("annotation %s: value of %d bytes is longer than the limit of %d; ignoring it", key, len(v), MaxListLength))
		return nil
	}
	var out []string
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if len(out) == MaxListEntries {
			p.errs = append(p.errs, fmt.Errorf("annotation %s: more than %d entries; ignoring the rest", key, MaxListEntries))
			break
		}
		out = append(out, entry)
	}
	return out
}

func hasAny(annotations map[string]string, keys []string) bool {
	for _, k := range keys {
		if _, ok := annotations[k]; ok {
			return true
		}
	}
	return false
}

// truncate shortens an entry quoted in an error, so that an Event stays
// readable (entries may be up to MaxListLength bytes).
func truncate(entry string) string {
	const keep = 64
	if len(entry) <= keep {
		return entry
	}
	return entry[:keep] + "..."
}
