package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
)

func newPlan(o *Options) *cobra.Command {
	var fo resource.FilenameOptions
	var failOnRollout bool
	var out *output
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR|- | -k DIR",
		Short: "Show which workloads would roll if the ConfigMaps and Secrets in the manifests were applied now",
		Long: `plan reads the ConfigMaps and Secrets in the manifests and asks Reroll's planner, against the
live workloads and their records, what applying them now would roll. Values are read from the
files only to be digested, as Reroll does, and are never printed. Exit status 0, or 1 on an
error. With --fail-on-rollout, as kubectl diff: 0 when nothing would roll, 1 when something
would, 2 when plan failed.`,
		Example: `  kubectl reroll plan -f config/ -n shop
  kustomize build overlays/prod | kubectl reroll plan -f - -o json
  kubectl reroll plan -k overlays/prod --fail-on-rollout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			defer func() {
				// kubectl diff's convention: 1 is the answer "differences",
				// so a failure must exit with more.
				if failOnRollout && err != nil && !errors.Is(err, ErrWouldRoll) {
					err = &exitError{code: ExitPlanError, err: err}
				}
			}()
			if err := out.validate(); err != nil {
				return err
			}
			if err := fo.RequireFilenameOrKustomize(); err != nil {
				return err
			}
			s, err := newSession(o)
			if err != nil {
				return err
			}
			ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
			if err != nil {
				return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
			}
			manifests, err := readManifests(o, &fo, ns)
			if err != nil {
				return err
			}
			r, err := s.plan(cmd.Context(), manifests)
			if err != nil {
				return err
			}
			if err := s.health.verdict(); err != nil {
				return err
			}
			if out.table() {
				err = r.write(o.Out, out.wide())
			} else {
				err = out.print(o.Out, "Plan", r)
			}
			if err != nil {
				return err
			}
			if failOnRollout && r.Summary.Workloads > 0 {
				return ErrWouldRoll
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&fo.Filenames, "filename", "f", nil, "Files, directories or URLs of the manifests; - reads standard input.")
	cmd.Flags().StringVarP(&fo.Kustomize, "kustomize", "k", "", "A kustomization directory to build and read.")
	cmd.Flags().BoolVarP(&fo.Recursive, "recursive", "R", false, "Read the directories of -f recursively.")
	cmd.Flags().BoolVar(&failOnRollout, "fail-on-rollout", false, "Exit with status 1 when applying the manifests would roll any workload, and 2 when plan fails (as kubectl diff).")
	out = newOutput(cmd)
	return cmd
}

// manifestObject is one ConfigMap or Secret of the manifests, as digests.
type manifestObject struct {
	key         objectKey
	annotations map[string]string
	labels      map[string]string
	data        digest.Data
}

// readManifests reads the ConfigMaps and Secrets of the manifests (other
// kinds are skipped) and digests their values; an object without a
// namespace gets namespace, as kubectl apply gives it.
func readManifests(o *Options, fo *resource.FilenameOptions, namespace string) ([]manifestObject, error) {
	// Local: the files are only decoded, so kinds the cluster does not
	// serve (custom resources of the same kustomization) are no error.
	infos, err := resource.NewBuilder(o.ConfigFlags).Unstructured().Local().
		FilenameParam(false, fo).Flatten().Do().Infos()
	if err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	var out []manifestObject
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		gvk := u.GroupVersionKind()
		if gvk.Group != "" || (gvk.Kind != "ConfigMap" && gvk.Kind != "Secret") {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		m := manifestObject{annotations: u.GetAnnotations(), labels: u.GetLabels()}
		// A copy of the data, which nothing here reads.
		delete(m.annotations, corev1.LastAppliedConfigAnnotation)
		if gvk.Kind == "Secret" {
			var sec corev1.Secret
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &sec); err != nil {
				return nil, fmt.Errorf("reading Secret %s from %s: %w", u.GetName(), info.Source, err)
			}
			// The API server merges stringData into data, stringData
			// winning.
			if len(sec.StringData) > 0 && sec.Data == nil {
				sec.Data = map[string][]byte{}
			}
			for k, v := range sec.StringData {
				sec.Data[k] = []byte(v)
			}
			sec.StringData = nil
			m.key = objectKey{kind: reference.Secret, namespace: ns, name: u.GetName()}
			m.data, _ = digest.Of(&sec)
		} else {
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
				return nil, fmt.Errorf("reading ConfigMap %s from %s: %w", u.GetName(), info.Source, err)
			}
			m.key = objectKey{kind: reference.ConfigMap, namespace: ns, name: u.GetName()}
			m.data, _ = digest.Of(&cm)
		}
		out = append(out, m)
	}
	return out, nil
}

// objectRefs lists the workloads that would roll.
func (r planReport) objectRefs() []objectRef {
	var out []objectRef
	for _, w := range r.Workloads {
		if w.Rolls {
			out = append(out, w.ref)
		}
	}
	return out
}

// planReport is plan's answer.
type planReport struct {
	// Objects are the manifests' ConfigMaps and Secrets, as
	// "namespace/Kind/name".
	Objects   []string       `json:"objects"`
	Workloads []planWorkload `json:"workloads"`
	Summary   planSummary    `json:"summary"`
	Notes     []string       `json:"notes,omitempty"`
}

type planSummary struct {
	// Workloads and Namespaces count the workloads that would roll.
	Workloads  int `json:"workloads"`
	Namespaces int `json:"namespaces"`
}

// planWorkload is one workload that reads or lists a manifest's object.
type planWorkload struct {
	Workload  string `json:"workload"`
	Namespace string `json:"namespace"`
	Dialect   string `json:"dialect,omitempty"`
	Rolls     bool   `json:"rolls"`
	// NamespaceWave is its Namespace's reroll.dev/rollout-wave: the
	// namespace's place in the order of the change sets that the placed
	// namespaces share; absent when the Namespace carries none (its
	// workloads' change sets stay within the namespace) or could not be
	// read. Wave is its own reroll.dev/rollout-wave (0 without one): its
	// order within its namespace's place. A change set rolls the lowest
	// namespace wave first, and within it the lowest wave
	// (docs/delivery.md).
	NamespaceWave *int `json:"namespaceWave,omitempty"`
	Wave          int  `json:"wave"`
	// Changes are the manifests' changes that roll it (or would, but are
	// held: see Reason).
	Changes []changeObject `json:"changes,omitempty"`
	// Reason says why it does not roll, or what else is pending.
	Reason string `json:"reason,omitempty"`
	// ref is the workload, for -o name.
	ref objectRef
}

// plan lays the manifests over the live objects and compares Reroll's
// decisions with and without them for every workload in their namespaces.
func (s *session) plan(ctx context.Context, manifests []manifestObject) (planReport, error) {
	r := planReport{Objects: []string{}, Workloads: []planWorkload{}}
	r.Notes = s.discover(ctx)
	if note := s.loadInstalledAt(ctx); note != "" {
		r.Notes = append(r.Notes, note)
	}
	// The apply happens now: what it changes or creates is, for the
	// first-sight rule, changed or created now.
	now := plan.Happened{At: time.Now().UTC()}
	overlay := map[objectKey]objectState{}
	namespaces := map[string]bool{}
	for _, m := range manifests {
		live := s.objects.live(ctx, m.key)
		st := objectState{known: true, exists: true, data: m.data, uid: live.uid, resourceVersion: live.resourceVersion, history: live.history}
		switch {
		case !live.exists:
			st.history = plan.History{Created: now}
		case !maps.Equal(live.data.Keys, m.data.Keys):
			st.history.Changed = now
		}
		// Apply keeps annotations and labels the manifest does not set.
		st.annotations, st.labels = merged(live.annotations, m.annotations), merged(live.labels, m.labels)
		if live.known && live.exists && (!maps.Equal(live.data.Keys, m.data.Keys) || !maps.Equal(live.annotations, st.annotations) || !maps.Equal(live.labels, st.labels)) {
			// The apply writes the object: a new resourceVersion, which is
			// all pod-reloader's dialect compares.
			st.resourceVersion += "+applied"
		}
		if !live.known {
			r.Notes = append(r.Notes, fmt.Sprintf("could not read the live %s in %s (%v): its annotations are taken from the manifest only", m.key, m.key.namespace, live.err))
		}
		overlay[m.key] = st
		namespaces[m.key.namespace] = true
		r.Objects = append(r.Objects, m.key.namespace+"/"+m.key.String())
	}
	sort.Strings(r.Objects)
	rolling := map[string]bool{}
	for _, ns := range sortedKeys(namespaces) {
		targets, notes, err := s.workloads(ctx, ns)
		if err != nil {
			return r, err
		}
		r.Notes = append(r.Notes, notes...)
		var nsAnnotations map[string]string
		var nsObj corev1.Namespace
		if err := s.client.Get(ctx, types.NamespacedName{Name: ns}, &nsObj); err == nil {
			nsAnnotations = nsObj.Annotations
		} else if !apierrors.IsForbidden(err) {
			// A user who may not read Namespaces sees the workloads' own
			// waves only.
			r.Notes = append(r.Notes, fmt.Sprintf("could not read Namespace %s for its rollout wave: %v", ns, readError(err)))
		}
		for _, t := range targets {
			s.objects.overlay = nil
			if t, err = s.rebased(ctx, t); err != nil {
				return r, err
			}
			before, err := s.decide(ctx, t)
			if err != nil {
				return r, err
			}
			s.objects.overlay = overlay
			after, err := s.decide(ctx, t)
			s.objects.overlay = nil
			if err != nil {
				return r, err
			}
			w, ok := planFor(t, before, after, overlay)
			if !ok {
				continue
			}
			if reason := s.scope(ctx, t); reason != "" && w.Rolls {
				w.Rolls, w.Reason = false, reason
			}
			pos, _ := delivery.PositionOf(t.obj.GetAnnotations(), nsAnnotations) // malformed: 0, as Reroll counts it
			if _, placed := delivery.NamespaceWave(nsAnnotations); placed {
				w.NamespaceWave = &pos.Place
			}
			w.Wave = pos.Wave
			w.ref = s.refOf(t.obj)
			if w.Rolls {
				rolling[ns] = true
				r.Summary.Workloads++
			}
			r.Workloads = append(r.Workloads, w)
		}
	}
	r.Summary.Namespaces = len(rolling)
	if s.baselineNote != "" {
		r.Notes = append(r.Notes, s.baselineNote)
	}
	return r, nil
}

// merged returns a copy of live with the manifest's entries set over it.
func merged(live, manifest map[string]string) map[string]string {
	out := make(map[string]string, len(live)+len(manifest))
	maps.Copy(out, live)
	maps.Copy(out, manifest)
	return out
}

// planFor compares one workload's plans without and with the manifests;
// false when it neither reads nor lists any of their objects.
func planFor(t target, before, after plan.Plan, overlay map[objectKey]objectState) (planWorkload, bool) {
	ns := t.obj.GetNamespace()
	inManifests := func(id string) bool {
		for k := range overlay {
			if k.namespace == ns && k.String() == id {
				return true
			}
		}
		return false
	}
	w := planWorkload{Workload: t.kind.Name() + "/" + t.obj.GetName(), Namespace: ns}
	var consulted []plan.Considered
	for _, c := range after.Considered {
		if inManifests(c.Ref.ID()) {
			consulted = append(consulted, c)
		}
	}
	referenced := false
	for _, ref := range referencesOf(t) {
		referenced = referenced || inManifests(ref.ID())
	}
	if len(consulted) == 0 && !referenced {
		return w, false
	}
	if after.OptIn.Enabled() {
		w.Dialect = string(after.OptIn.Dialect)
	}
	if acts(after) {
		for _, c := range after.Change.Objects {
			if inManifests(c.ID()) {
				w.Changes = append(w.Changes, c)
			}
		}
	}
	var held []string
	for i, h := range after.Held {
		if inManifests(h.Ref.ID()) {
			held = append(held, fmt.Sprintf("%s: held, Reroll runs without %s", h.Ref.ID(), after.HeldBy[i]))
		}
	}
	w.Rolls = len(w.Changes) > 0 && rolls(after)
	switch {
	case after.Outcome == plan.NotOptedIn:
		w.Reason = "not opted in"
	case after.Outcome == plan.DamagedRecord:
		w.Reason = "damaged record: Reroll records the state without a rollout"
	case after.Outcome == plan.FirstSight:
		w.Reason = "no record yet: Reroll takes what it sees first as the baseline, without a rollout"
	case after.Outcome == plan.Waiting:
		w.Reason = "Wave's dialect waits for " + strings.Join(after.Missing, ", ")
	case after.Outcome == plan.Refused:
		w.Reason = "its list patterns cost too much to match (annotation " + after.OptIn.MatchBudgetExceeded() + ")"
	case after.Outcome == plan.Deleting:
		w.Reason = "being deleted"
	case len(w.Changes) > 0 && after.Outcome == plan.NotRolled:
		w.Reason = "its kind does not restart for it: " + after.Roll.Why
	case len(w.Changes) > 0 && after.Outcome == plan.Notify:
		w.Reason = "Reroll posts the change to its notification endpoint (--webhook-url) instead of rolling"
	case len(held) > 0 && !w.Rolls:
		w.Reason = strings.Join(held, "; ")
	case !w.Rolls:
		var parts []string
		for _, c := range consulted {
			if c.Selected {
				parts = append(parts, c.Ref.ID()+": no key it reads changes")
			} else {
				parts = append(parts, c.Ref.ID()+": "+string(c.Rule))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, "its opt-in does not cover what its pod template reads of the manifests' objects")
		}
		w.Reason = strings.Join(parts, "; ")
	}
	if acts(before) {
		note := "already pending without the manifests: " + before.Change.Summary()
		if w.Reason != "" {
			note = w.Reason + "; " + note
		}
		w.Reason = note
	}
	if len(after.Unreadable) > 0 {
		w.Reason = strings.TrimPrefix(w.Reason+"; could not read "+strings.Join(after.Unreadable, ", ")+" (counted as recorded)", "; ")
	}
	return w, true
}

// referencesOf returns the objects t's pod template reads.
func referencesOf(t target) []reference.Reference {
	return reference.FromPodTemplate(t.template)
}

// write prints the plan as a table and a summary line.
func (r planReport) write(w io.Writer, wide bool) error {
	if len(r.Objects) == 0 {
		fmt.Fprintln(w, "The manifests hold no ConfigMap or Secret: nothing would roll.")
		return nil
	}
	if len(r.Workloads) > 0 {
		cols := []string{"NAMESPACE", "WORKLOAD", "ROLLS", "CHANGES", "REASON"}
		placed := slices.ContainsFunc(r.Workloads, func(p planWorkload) bool { return p.NamespaceWave != nil })
		waves := placed || slices.ContainsFunc(r.Workloads, func(p planWorkload) bool { return p.Wave != 0 })
		if waves {
			// Safe delivery rolls the lowest namespace wave first, then
			// the lowest wave within it (docs/delivery.md).
			cols = slices.Insert(cols, 3, "NS-WAVE", "WAVE")
		}
		if wide {
			cols = slices.Insert(cols, 2, "DIALECT")
		}
		t := newTable(w, cols...)
		for _, p := range r.Workloads {
			row := []string{p.Namespace, p.Workload, yesNo(p.Rolls), summary(p.Changes), p.Reason}
			if waves {
				// "-": a Namespace without a wave keeps its change sets to
				// itself.
				place := "-"
				if p.NamespaceWave != nil {
					place = strconv.Itoa(*p.NamespaceWave)
				}
				row = slices.Insert(row, 3, place, strconv.Itoa(p.Wave))
			}
			if wide {
				row = slices.Insert(row, 2, p.Dialect)
			}
			t.row(row...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%d workload(s) in %d namespace(s) would roll; %d ConfigMap(s) and Secret(s) read from the manifests.\n", r.Summary.Workloads, r.Summary.Namespaces, len(r.Objects))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	return nil
}
