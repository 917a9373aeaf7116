package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/validator"
	"github.com/reroll/reroll/internal/workload"
)

// rerollReasons are the reasons of the Events Reroll records on workloads.
var rerollReasons = []string{
	plan.ReasonRolled, plan.ReasonNotRolled, plan.ReasonNotified,
	plan.ReasonPaused, plan.ReasonResumed, plan.ReasonRollFailed,
	plan.ReasonInvalidAnnotation, plan.ReasonInvalidWorkload, plan.ReasonEvictionDisabled,
	validator.ReasonInvalidContent,
}

// rolloutReasons are the Events that report a change Reroll acted on.
var rolloutReasons = []string{plan.ReasonRolled, plan.ReasonNotRolled, plan.ReasonNotified, plan.ReasonRollFailed, plan.ReasonEvictionDisabled}

func newWhy(o *Options) *cobra.Command {
	var events int
	var out *output
	cmd := &cobra.Command{
		Use:               "why KIND/NAME",
		ValidArgsFunction: completeKindName(o, workloadKindNames...),
		Short:             "Show a workload's record, its last rollouts and their keys, its trigger, and what blocks it now",
		Example: `  kubectl reroll why deployment/web -n shop
  kubectl reroll why sts/db -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			s, err := newSession(o)
			if err != nil {
				return err
			}
			kindName, name, ok := strings.Cut(args[0], "/")
			if !ok || name == "" {
				return fmt.Errorf("want KIND/NAME, e.g. deployment/web; got %q", args[0])
			}
			if s.namespace == "" {
				return fmt.Errorf("why needs one namespace: use -n, not -A")
			}
			k, err := s.kindFor(kindName)
			if err != nil {
				return err
			}
			t, err := s.workload(cmd.Context(), k, s.namespace, name)
			if err != nil {
				return err
			}
			r, err := s.why(cmd.Context(), t, events)
			if err != nil {
				return err
			}
			r.ref = s.refOf(t.obj)
			if err := s.health.verdict(); err != nil {
				return err
			}
			if out.table() {
				return r.write(o.Out)
			}
			return out.print(o.Out, "Why", r)
		},
	}
	cmd.Flags().IntVar(&events, "events", 5, "How many of Reroll's last rollout Events to show.")
	out = newOutput(cmd)
	return cmd
}

// objectRefs lists the workload.
func (r whyReport) objectRefs() []objectRef { return []objectRef{r.ref} }

// whyReport is `why`'s answer.
type whyReport struct {
	Kind      string `json:"workloadKind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// OptedIn and Dialect are what the workload's annotations ask.
	OptedIn bool   `json:"optedIn"`
	Dialect string `json:"dialect,omitempty"`
	// Record is reroll.dev/observed: objects and the keys recorded, never
	// their digests.
	Record        []recordEntry `json:"record"`
	RecordProblem string        `json:"recordProblem,omitempty"`
	// Baseline is NAMESPACE/NAME of the ConfigMap where Reroll keeps the
	// workload's baseline, when it has no record yet and Reroll keeps one
	// there (a key it does not read changed before its first rollout):
	// Record is then that baseline.
	Baseline string `json:"baseline,omitempty"`
	// Trigger is what Reroll writes to roll the workload, as it is now.
	Trigger []triggerEntry `json:"trigger"`
	// Pins are the versions the pod template is pinned to (versioned
	// config): one per source.
	Pins []pinEntry `json:"pins,omitempty"`
	// Rollouts are Reroll's last rollout Events, newest first.
	Rollouts []rolloutEvent `json:"rollouts"`
	// Objects are the objects the opt-in considered and the rule that
	// decided each.
	Objects []objectDecision `json:"objects"`
	// Pending are changes since the record that Reroll has not acted on
	// yet (it may be down, or waiting for its coalesce window).
	Pending []changeObject `json:"pending,omitempty"`
	// Blocks say what stops the workload from rolling now.
	Blocks []string `json:"blocks"`
	// Notes say which Reroll's arguments the answer follows, or why it
	// follows the defaults.
	Notes []string `json:"notes,omitempty"`
	// ref is the workload, for -o name.
	ref objectRef
}

type recordEntry struct {
	Object string   `json:"object"`
	Exists bool     `json:"exists"`
	Keys   []string `json:"keys,omitempty"`
	// MissingKeys are consumed keys the object did not have.
	MissingKeys []string `json:"missingKeys,omitempty"`
}

type triggerEntry struct {
	// Where is "pod template annotation" or "env of container NAME".
	Where string `json:"where"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

type rolloutEvent struct {
	Time    time.Time      `json:"time"`
	Type    string         `json:"type"`
	Reason  string         `json:"reason"`
	Count   int32          `json:"count"`
	Message string         `json:"message"`
	Changes []changeObject `json:"changes,omitempty"`
}

// pinEntry is one source a versioned workload's pod template reads
// through a copy.
type pinEntry struct {
	// Source is "Kind/name"; Copy the copy's name.
	Source string `json:"source"`
	Copy   string `json:"copy"`
	// Since is when the copy was made (RFC 3339): when this content was
	// first pinned in the namespace.
	Since string `json:"since,omitempty"`
	// SourceNow says where the source is now: "at this version", "moved
	// on" (the source changed since: a rollout is due, or an undo keeps
	// the older version), "deleted", or "unknown" (not readable).
	SourceNow string `json:"sourceNow"`
}

// pinEntries describes t's pins: each copy, when it was made, and whether
// its source still holds its content (compared here, never printed).
func (s *session) pinEntries(ctx context.Context, t target) []pinEntry {
	var out []pinEntry
	for _, c := range slices.SortedFunc(maps.Keys(t.pins), func(a, b pin.Ref) int { return strings.Compare(a.String(), b.String()) }) {
		e := pinEntry{Source: string(c.Kind) + "/" + t.pins[c], Copy: c.Name, SourceNow: "unknown"}
		cp, src := newData(c.Kind), newData(c.Kind)
		ns := t.obj.GetNamespace()
		errCopy := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: c.Name}, cp)
		if errCopy == nil {
			e.Since = cp.GetCreationTimestamp().UTC().Format(time.RFC3339)
		}
		err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: t.pins[c]}, src)
		switch {
		case apierrors.IsNotFound(err):
			e.SourceNow = "deleted"
		case err == nil && errCopy == nil:
			e.SourceNow = "moved on"
			if sameData(cp, src) {
				e.SourceNow = "at this version"
			}
		}
		out = append(out, e)
	}
	return out
}

// newData is an empty ConfigMap or Secret.
func newData(k reference.Kind) client.Object {
	if k == reference.Secret {
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}

// sameData reports whether two ConfigMaps or Secrets hold the same keys
// and values.
func sameData(a, b client.Object) bool {
	switch x := a.(type) {
	case *corev1.ConfigMap:
		y := b.(*corev1.ConfigMap)
		return maps.Equal(x.Data, y.Data) && maps.EqualFunc(x.BinaryData, y.BinaryData, bytes.Equal)
	case *corev1.Secret:
		return maps.EqualFunc(x.Data, b.(*corev1.Secret).Data, bytes.Equal)
	}
	return false
}

type objectDecision struct {
	Object   string `json:"object"`
	Selected bool   `json:"selected"`
	Rule     string `json:"rule"`
}

// why gathers the answer for t from the workload, its objects and Reroll's
// Events; at most n rollout Events.
func (s *session) why(ctx context.Context, t target, n int) (whyReport, error) {
	r := whyReport{Kind: t.kind.Name(), Namespace: t.obj.GetNamespace(), Name: t.obj.GetName(), Record: []recordEntry{}, Trigger: []triggerEntry{}, Rollouts: []rolloutEvent{}, Objects: []objectDecision{}, Blocks: []string{}}
	r.Notes = s.discover(ctx)
	// Without it, a workload with no record shows no pending change; the
	// plan's notes say why it is unknown, here the answer stays silent.
	_ = s.loadInstalledAt(ctx)
	recorded := t.obj.GetAnnotations()[plan.RecordAnnotation]
	decided := t
	if recorded == "" {
		// No record: Reroll compares with the baseline it keeps, if it
		// keeps one, keyed like a record (rebased).
		if e, at, ok := s.storedBaseline(ctx, t); ok {
			recorded, r.Baseline = e.Record, at
			var err error
			if decided, err = s.rebased(ctx, t); err != nil {
				return r, err
			}
		}
		if s.baselineNote != "" {
			r.Notes = append(r.Notes, s.baselineNote)
		}
	}
	p, err := s.decide(ctx, decided)
	if err != nil {
		return r, err
	}
	r.OptedIn = p.OptIn.Enabled()
	if r.OptedIn {
		r.Dialect = string(p.OptIn.Dialect)
	}
	rec, err := plan.ParseRecord(recorded)
	if err != nil {
		r.RecordProblem = err.Error()
	}
	for _, id := range sortedKeys(rec) {
		e := recordEntry{Object: id, Exists: rec[id] != nil}
		for _, k := range sortedKeys(rec[id]) {
			if rec[id][k] == "" {
				e.MissingKeys = append(e.MissingKeys, k)
			} else if k != plan.WrittenKey {
				e.Keys = append(e.Keys, k)
			}
		}
		r.Record = append(r.Record, e)
	}
	r.Trigger = triggers(t.template)
	r.Pins = s.pinEntries(ctx, t)
	for _, c := range p.Considered {
		r.Objects = append(r.Objects, objectDecision{Object: c.Ref.ID(), Selected: c.Selected, Rule: ruleText(p.OptIn, c)})
	}
	if acts(p) {
		r.Pending = p.Change.Objects
	}
	evs, err := s.rerollEvents(ctx, t.obj)
	if err != nil {
		return r, err
	}
	for _, e := range evs {
		if slices.Contains(rolloutReasons, e.Reason) && len(r.Rollouts) < n {
			r.Rollouts = append(r.Rollouts, rolloutEvent{Time: eventTime(e), Type: e.Type, Reason: e.Reason, Count: max(e.Count, 1), Message: e.Message, Changes: parseSummary(e.Message)})
		}
	}
	r.Blocks = s.blocks(t, p, evs)
	if reason := s.scope(ctx, t); reason != "" {
		r.Blocks = append([]string{reason}, r.Blocks...)
	}
	return r, nil
}

// blocks lists what stops t from rolling now, from the plan p and the
// Events evs.
func (s *session) blocks(t target, p plan.Plan, evs []corev1.Event) []string {
	out := []string{}
	if !p.OptIn.Enabled() {
		out = append(out, "not opted in: the workload has none of Reroll's, Reloader's, pod-reloader's or Wave's opt-in annotations")
	}
	for _, e := range p.Problems {
		out = append(out, "invalid annotation: "+e.Error())
	}
	if p.DamagedRecord != nil {
		out = append(out, "damaged record: "+p.DamagedRecord.Error()+"; Reroll records the current state without a rollout")
	}
	if d, ok := t.obj.(*appsv1.Deployment); ok {
		key := s.planOptions.Annotations.Names.PausedAt
		if at, has := d.Annotations[key]; has {
			msg := fmt.Sprintf("paused by Reroll at %s (%s)", at, key)
			if start, err := time.Parse(time.RFC3339, at); err == nil && p.OptIn.PausePeriod > 0 {
				msg += fmt.Sprintf(" for its pause period of %s, until %s", p.OptIn.PausePeriod, start.Add(p.OptIn.PausePeriod).UTC().Format(time.RFC3339))
			}
			out = append(out, msg+": the Deployment rolls everything that changed when the pause ends")
		} else if d.Spec.Paused {
			out = append(out, "spec.paused is true (not paused by Reroll): the Deployment rolls nothing until someone resumes it")
		}
	}
	for _, c := range p.Considered {
		switch c.Rule {
		case plan.RuleIgnoredKind, plan.RuleIgnoreAnnotation, plan.RuleExcluded:
			out = append(out, c.Ref.ID()+": "+string(c.Rule))
		}
	}
	for i, h := range p.Held {
		out = append(out, fmt.Sprintf("%s: held, Reroll runs without %s", h.Ref.ID(), p.HeldBy[i]))
	}
	for _, m := range p.Missing {
		out = append(out, "Wave's dialect waits for "+m)
	}
	if p.Outcome == plan.NotRolled {
		out = append(out, "its kind does not restart for a change: "+p.Roll.Why)
	}
	for _, u := range p.Unreadable {
		out = append(out, "could not read "+u+" (forbidden): counted as Reroll last recorded it; its own ignore and match annotations are unknown here")
	}
	// A hold for content that fails a Validator (reroll.dev/pending
	// invalid): the newest InvalidContent Event names the rule and the key
	// (docs/validation.md).
	if string(plan.DisplayedPendingReason(t.obj.GetAnnotations())) == validator.HoldInvalid {
		msg := "the new content fails a Validator's rule"
		for _, e := range evs {
			if e.Reason == validator.ReasonInvalidContent {
				msg = strings.TrimPrefix(e.Message, "Held, nothing rolls: ")
				break
			}
		}
		out = append(out, "held (pending invalid): "+msg)
	}
	// A failed rollout newer than the last success is still being retried.
	for _, e := range evs {
		if e.Reason == plan.ReasonRolled || e.Reason == plan.ReasonNotified {
			break
		}
		if e.Reason == plan.ReasonRollFailed {
			out = append(out, "last rollout failed, Reroll retries with backoff: "+e.Message)
			break
		}
	}
	return out
}

// ruleText is the rule that decided c, and whether it could be read.
func ruleText(o annotation.OptIn, c plan.Considered) string {
	if undecided(o, c) {
		return string(c.Rule) + ", unless the object's own ignore or match annotation, which could not be read, says otherwise"
	}
	return string(c.Rule)
}

// triggers returns Reroll's triggers present on the pod template: the
// annotations of each dialect and Reloader's STAKATER_* variables. Their
// hashes are not shown: a hash of a Secret's data lets a reader test
// guesses of its values, and a terminal or a CI log is read more widely
// than the workload; Reloader's last-reloaded-from keeps its other fields.
func triggers(t *corev1.PodTemplateSpec) []triggerEntry {
	const hidden = "(a hash of the consumed data; not shown)"
	out := []triggerEntry{}
	for _, key := range []string{trigger.ConfigHashAnnotation, trigger.PodReloaderHashAnnotation, trigger.WaveHashAnnotation} {
		if _, ok := t.Annotations[key]; ok {
			out = append(out, triggerEntry{Where: "pod template annotation", Name: key, Value: hidden})
		}
	}
	if v, ok := t.Annotations[trigger.LastReloadedFromAnnotation]; ok {
		var rec map[string]any
		value := hidden
		if json.Unmarshal([]byte(v), &rec) == nil {
			if _, has := rec["hash"]; has {
				rec["hash"] = hidden
			}
			b, _ := json.Marshal(rec) // decoded JSON always encodes
			value = string(b)
		}
		out = append(out, triggerEntry{Where: "pod template annotation", Name: trigger.LastReloadedFromAnnotation, Value: value})
	}
	for _, ctr := range append(slices.Clone(t.Spec.Containers), t.Spec.InitContainers...) {
		for _, e := range ctr.Env {
			if strings.HasPrefix(e.Name, "STAKATER_") && e.ValueFrom == nil {
				out = append(out, triggerEntry{Where: "env of container " + ctr.Name, Name: e.Name, Value: hidden})
			}
		}
	}
	return out
}

// rerollEvents returns the Events Reroll recorded on obj, newest first.
func (s *session) rerollEvents(ctx context.Context, obj client.Object) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := s.client.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.name": obj.GetName(), "involvedObject.uid": string(obj.GetUID())}); err != nil {
		return nil, fmt.Errorf("listing the Events of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return newestRerollEvents(list.Items), nil
}

// newestRerollEvents keeps the Events Reroll recorded, newest first.
func newestRerollEvents(items []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for _, e := range items {
		if (e.Source.Component == workload.FieldManager || e.ReportingController == workload.FieldManager) && slices.Contains(rerollReasons, e.Reason) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	return out
}

// eventTime is when an Event last happened.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// write prints the report for a person.
func (r whyReport) write(w io.Writer) error {
	fmt.Fprintf(w, "Workload:  %s %s/%s\n", r.Kind, r.Namespace, r.Name)
	if r.OptedIn {
		fmt.Fprintf(w, "Opt-in:    yes, %s dialect\n", r.Dialect)
	} else {
		fmt.Fprintf(w, "Opt-in:    no\n")
	}
	if len(r.Trigger) == 0 {
		fmt.Fprintf(w, "Trigger:   none on the pod template yet (Reroll has not rolled it)\n")
	}
	for _, t := range r.Trigger {
		fmt.Fprintf(w, "Trigger:   %s %s=%s\n", t.Where, t.Name, t.Value)
	}
	for _, p := range r.Pins {
		fmt.Fprintf(w, "Pinned:    %s to copy %s", p.Source, p.Copy)
		if p.Since != "" {
			fmt.Fprintf(w, " (made %s)", p.Since)
		}
		fmt.Fprintf(w, "; source now: %s\n", p.SourceNow)
	}
	if r.Baseline != "" {
		fmt.Fprintf(w, "Record:    none on the workload yet; its baseline in ConfigMap %s", r.Baseline)
	} else {
		fmt.Fprintf(w, "Record:    %s", plan.RecordAnnotation)
	}
	switch {
	case r.RecordProblem != "":
		fmt.Fprintf(w, " is damaged: %s\n", r.RecordProblem)
	case len(r.Record) == 0:
		fmt.Fprintf(w, " is not set: Reroll writes it with the workload's first rollout (until then it compares with what it saw first), or the workload is not opted in\n")
	default:
		fmt.Fprintln(w)
		t := newTable(w, "  OBJECT", "KEYS RECORDED", "MISSING KEYS")
		for _, e := range r.Record {
			keys := list(e.Keys)
			if !e.Exists {
				keys = "(object did not exist)"
			}
			t.row("  "+e.Object, keys, list(e.MissingKeys))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.Objects) > 0 {
		fmt.Fprintln(w, "Objects:")
		t := newTable(w, "  OBJECT", "DECIDES", "RULE")
		for _, o := range r.Objects {
			t.row("  "+o.Object, yesNo(o.Selected), o.Rule)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.Rollouts) == 0 {
		fmt.Fprintln(w, "Rollouts:  no Events from Reroll (Events expire after an hour by default)")
	} else {
		fmt.Fprintln(w, "Rollouts:")
		t := newTable(w, "  AGE", "REASON", "OBJECTS", "KEYS", "MESSAGE")
		for _, e := range r.Rollouts {
			var objs, keys []string
			for _, c := range e.Changes {
				objs = append(objs, c.ID())
				keys = append(keys, c.Keys...)
			}
			t.row("  "+duration.HumanDuration(time.Since(e.Time)), e.Reason, list(objs), list(keys), e.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.Pending) > 0 {
		fmt.Fprintf(w, "Pending:   %s (changed since the record; Reroll has not acted yet)\n", summary(r.Pending))
	}
	if len(r.Blocks) == 0 {
		fmt.Fprintln(w, "Blocked:   nothing")
	}
	for _, b := range r.Blocks {
		fmt.Fprintf(w, "Blocked:   %s\n", b)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
