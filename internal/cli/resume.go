package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/delivery"
	haltrecords "github.com/reroll/reroll/internal/halts"
	"github.com/reroll/reroll/internal/plan"
)

// changeSetFlags say where Reroll keeps its halt records.
type changeSetFlags struct {
	// namespace is Reroll's namespace (--reroll-namespace).
	namespace string
	// prefix names the ConfigMaps of halt records (--change-sets).
	prefix string
}

func (f *changeSetFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.namespace, "reroll-namespace", "reroll-system", "The namespace Reroll runs in; by default the namespace of the Reroll Deployment found by label in any namespace, else reroll-system.")
	cmd.Flags().StringVar(&f.prefix, "change-sets", "reroll-change-sets", "The prefix of the halt records' ConfigMaps (one per change set, labelled "+haltrecords.LabelKey+"=<prefix>), in --reroll-namespace (Reroll's --change-sets; the chart's <release>-change-sets); by default read from the controller's arguments.")
}

func newResume(o *Options) *cobra.Command {
	f := changeSetFlags{}
	cmd := &cobra.Command{
		Use:               "resume KIND/NAME",
		ValidArgsFunction: completeKindName(o, append(slices.Clone(workloadKindNames), objectKindNames...)...),
		Short:             "Continue a change set the circuit breaker halted: its held workloads roll, wave by wave",
		Long: `resume accepts the failure of a halted change set: the next wave starts at once, and
only rollouts that fail from now on count towards --halt-after-failed-rollouts.
KIND/NAME is any member of the set: a workload held or rolled for it, or a changed
ConfigMap or Secret, in a namespace that the set's halt record names (a failed
workload's, or a changed object's): a set that a workload's annotation names but
whose record names no object of its namespace is not resumed. It writes the set's
halt record, a ConfigMap in Reroll's namespace, so it needs list, get and update on
ConfigMaps there.`,
		Example: `  kubectl reroll resume deployment/web -n shop
  kubectl reroll resume configmap/app-config -n canary --reroll-namespace reroll`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := newSession(o)
			if err != nil {
				return err
			}
			if s.namespace == "" {
				return fmt.Errorf("resume needs one namespace: use -n, not -A")
			}
			kindName, name, ok := strings.Cut(args[0], "/")
			if !ok || name == "" {
				return fmt.Errorf("want KIND/NAME, e.g. deployment/web or configmap/app-config; got %q", args[0])
			}
			s.locate(cmd.Context(), cmd.Flags(), o.RerollSelector, &f, nil)
			ids, err := s.resume(cmd.Context(), f, kindName, name, time.Now())
			if err != nil {
				return err
			}
			for _, id := range ids {
				fmt.Fprintf(o.Out, "Resumed %s\n", id)
			}
			return nil
		},
	}
	f.addFlags(cmd)
	return cmd
}

// haltRecord is one set's halt record as the plugin reads it.
type haltRecord struct {
	halt *delivery.Halt
	// name is its ConfigMap, "<namespace>/<name>"; unsigned is set when it
	// carries no signature, so Reroll ignores it (the plugin cannot read
	// the installation key to verify one that does).
	name     string
	unsigned bool
}

// haltRecords reads the halt records, one ConfigMap per set, by set ID.
func (s *session) haltRecords(ctx context.Context, f changeSetFlags) (map[string]haltRecord, error) {
	var list corev1.ConfigMapList
	if err := s.client.List(ctx, &list, client.InNamespace(f.namespace), client.MatchingLabelsSelector{Selector: haltrecords.Selector(f.prefix)}); err != nil {
		return nil, fmt.Errorf("reading the halt records (ConfigMaps labelled %s=%s in %s): %w", haltrecords.LabelKey, f.prefix, f.namespace, readError(err))
	}
	out := map[string]haltRecord{}
	for i := range list.Items {
		cm := &list.Items[i]
		id, ok := haltrecords.ID(f.prefix, cm)
		if !ok {
			continue
		}
		// Unverified: the plugin cannot read the installation key; Reroll
		// itself ignores a record it did not sign.
		if h, err := haltrecords.Read(cm); err == nil {
			out[id] = haltRecord{halt: h, name: cm.Namespace + "/" + cm.Name, unsigned: cm.Data[haltrecords.SignatureKey] == ""}
		}
	}
	return out, nil
}

// halts reads the halt records by set ID.
func (s *session) halts(ctx context.Context, f changeSetFlags) (map[string]*delivery.Halt, error) {
	records, err := s.haltRecords(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*delivery.Halt, len(records))
	for id, r := range records {
		out[id] = r.halt
	}
	return out, nil
}

// resume resumes, at now, every halted change set that the object
// kindName/name of the session's namespace is a member of, or the workload
// held by the storm breaker, and returns what it resumed ("change set ID",
// "storm breaker of Kind ns/name"); it fails when nothing was held.
func (s *session) resume(ctx context.Context, f changeSetFlags, kindName, name string, now time.Time) ([]string, error) {
	halts, err := s.halts(ctx, f)
	if err != nil {
		return nil, err
	}
	var ids []string
	switch k := strings.ToLower(kindName); k {
	case "configmap", "configmaps", "cm", "secret", "secrets":
		kind := "ConfigMap"
		if strings.HasPrefix(k, "secret") {
			kind = "Secret"
		}
		obj := kind + "/" + s.namespace + "/" + name
		for id, h := range halts {
			if h.Active() && slices.Contains(h.Objects, obj) {
				ids = append(ids, id)
			}
		}
	default:
		wk, err := s.kindFor(kindName)
		if err != nil {
			return nil, err
		}
		t, err := s.workload(ctx, wk, s.namespace, name)
		if err != nil {
			return nil, err
		}
		rec, err := delivery.ParseRecord(plan.Displayed(t.obj.GetAnnotations(), delivery.MemberAnnotation))
		if err != nil {
			return nil, err
		}
		// The annotation only proposes sets: anyone who may edit the
		// workload may write another namespace's set there. A set is
		// resumed only when its halt record, which only Reroll and the
		// operators write, names the workload's namespace.
		ids = delivery.Resumable(halts, rec.Sets, s.namespace)
		if _, ok := t.obj.GetAnnotations()[delivery.RolloutsAnnotation]; ok && string(plan.DisplayedPendingReason(t.obj.GetAnnotations())) == delivery.HoldStorm {
			// Held by the storm breaker: forgetting its latest rollouts
			// lets it roll at once.
			patch := []byte(`{"metadata":{"annotations":{"` + delivery.RolloutsAnnotation + `":null}}}`)
			if err := s.client.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return nil, fmt.Errorf("resuming %s from the storm breaker: %w", t, err)
			}
			if len(ids) == 0 {
				return []string{"storm breaker of " + t.String()}, nil
			}
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s/%s in %s is in no halted change set", kindName, name, s.namespace)
	}
	sort.Strings(ids)
	for _, id := range ids {
		key := types.NamespacedName{Namespace: f.namespace, Name: haltrecords.Name(f.prefix, id)}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cm corev1.ConfigMap
			if err := s.client.Get(ctx, key, &cm); err != nil {
				return err
			}
			// Beside the signed record, which the plugin cannot sign:
			// the resume of that one halt (haltrecords.Resume).
			if err := haltrecords.Resume(&cm, now); err != nil {
				return err
			}
			return s.client.Update(ctx, &cm)
		})
		if err != nil {
			return nil, fmt.Errorf("writing the halt record %s: %w", key, err)
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "change set " + id
	}
	return out, nil
}

// haltedSet is one halted change set, for `status`: one halt record.
type haltedSet struct {
	ID     string    `json:"id"`
	Halted time.Time `json:"halted"`
	// Record is the ConfigMap of its halt record, "<namespace>/<name>";
	// Unsigned is set when the record carries no signature: Reroll
	// ignores it, and it holds nothing.
	Record   string `json:"record"`
	Unsigned bool   `json:"unsigned,omitempty"`
	// Failed names the failed workloads; Signal what failed first;
	// Objects the changed objects, "Kind/ns/name".
	Failed  []string `json:"failed"`
	Signal  string   `json:"signal"`
	Objects []string `json:"objects"`
	// Held are the workloads pending with the reason halted, "Kind/ns/name",
	// and HeldAt their positions in the set, in the same order.
	Held   []string `json:"held"`
	HeldAt []string `json:"heldAt"`
	// Waves are the held workloads' own waves, NamespaceWaves their
	// Namespaces' (the places in the order across namespaces): the waves
	// still to go.
	Waves          []int `json:"waves"`
	NamespaceWaves []int `json:"namespaceWaves"`
}

// haltedSets lists the halted change sets, one per halt record, with their
// held workloads in the session's namespaces and the position of each
// (delivery.Position: its Namespace's wave, then its own).
func (s *session) haltedSets(ctx context.Context, f changeSetFlags) ([]haltedSet, []string, error) {
	records, err := s.haltRecords(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if note := s.legacyHaltRecords(ctx, f); note != "" {
		notes = append(notes, note)
	}
	if len(records) == 0 {
		return nil, notes, nil
	}
	byID := map[string]*haltedSet{}
	type held struct {
		name string
		at   delivery.Position
	}
	holds := map[string][]held{}
	for id, r := range records {
		if h := r.halt; h.Active() {
			byID[id] = &haltedSet{ID: id, Halted: h.Halted, Record: r.name, Unsigned: r.unsigned, Failed: h.Failed, Signal: h.Signal,
				Objects: append([]string{}, h.Objects...), Held: []string{}, HeldAt: []string{}, Waves: []int{}, NamespaceWaves: []int{}}
		}
	}
	ts, more, err := s.workloads(ctx, s.namespace)
	notes = append(notes, more...)
	if err != nil {
		return nil, notes, err
	}
	for _, t := range ts {
		a := t.obj.GetAnnotations()
		if string(plan.DisplayedPendingReason(a)) != delivery.HoldHalted {
			continue
		}
		rec, err := delivery.ParseRecord(plan.Displayed(a, delivery.MemberAnnotation))
		if err != nil {
			continue
		}
		for _, id := range rec.Sets {
			if hs := byID[id]; hs != nil {
				holds[id] = append(holds[id], held{name: t.kind.Name() + "/" + t.obj.GetNamespace() + "/" + t.obj.GetName(), at: rec.Position()})
				if !slices.Contains(hs.Waves, rec.Wave) {
					hs.Waves = append(hs.Waves, rec.Wave)
				}
				if !slices.Contains(hs.NamespaceWaves, rec.Place) {
					hs.NamespaceWaves = append(hs.NamespaceWaves, rec.Place)
				}
			}
		}
	}
	var out []haltedSet
	for id, hs := range byID {
		hw := holds[id]
		// In the order they would roll, then by name.
		sort.Slice(hw, func(i, j int) bool {
			if hw[i].at != hw[j].at {
				return hw[i].at.Less(hw[j].at)
			}
			return hw[i].name < hw[j].name
		})
		for _, h := range hw {
			hs.Held = append(hs.Held, h.name)
			hs.HeldAt = append(hs.HeldAt, h.at.String())
		}
		sort.Ints(hs.Waves)
		sort.Ints(hs.NamespaceWaves)
		out = append(out, *hs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, notes, nil
}

// legacyHaltRecords returns a note when an older Reroll's one ConfigMap of
// halt records (named the prefix itself) is still there: Reroll reads it
// when it starts and records its halts again, one per set.
func (s *session) legacyHaltRecords(ctx context.Context, f changeSetFlags) string {
	var cm corev1.ConfigMap
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: f.namespace, Name: f.prefix}, &cm); err != nil {
		return ""
	}
	if _, labelled := cm.Labels[haltrecords.LabelKey]; labelled || len(cm.Data) == 0 {
		return ""
	}
	return fmt.Sprintf("ConfigMap %s/%s holds the halt records of an older Reroll (%d set(s)): Reroll holds those sets and records them again, one ConfigMap per set, when it starts", f.namespace, f.prefix, len(cm.Data))
}

// writeHalted writes the halted change sets as `status` shows them.
func writeHalted(w io.Writer, sets []haltedSet) {
	if len(sets) == 0 {
		fmt.Fprintln(w, "Halted change sets: none")
		return
	}
	fmt.Fprintln(w, "Halted change sets (kubectl reroll resume KIND/NAME -n NS continues one):")
	for _, hs := range sets {
		fmt.Fprintf(w, "  %s halted %s: %s\n", hs.ID, hs.Halted.UTC().Format(time.RFC3339), printable(hs.Signal))
		record := hs.Record
		if hs.Unsigned {
			record += " (not signed by Reroll: it holds nothing)"
		}
		fmt.Fprintf(w, "    record:  %s\n", record)
		fmt.Fprintf(w, "    failed:  %s\n", printable(strings.Join(hs.Failed, ", ")))
		fmt.Fprintf(w, "    changed: %s\n", printable(strings.Join(hs.Objects, ", ")))
		if len(hs.Held) == 0 {
			fmt.Fprintln(w, "    held:    none here")
			continue
		}
		fmt.Fprintln(w, "    held, in the order they roll once resumed:")
		for i, name := range hs.Held {
			fmt.Fprintf(w, "      %s (%s)\n", printable(name), hs.HeldAt[i])
		}
	}
}
