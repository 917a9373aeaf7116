package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/workload"
)

// TestPlan_UndoFailed checks the automatic undo of a versioned workload's
// failed rollout: when it writes the previous revision back, and when it
// says why not.
func TestPlan_UndoFailed(t *testing.T) {
	// The copy of the good content, as the cache holds it.
	k, good, gd, src := goodCopy(t)
	// A tenant's look-alike of a copy: no signature.
	src[cm("cfg-0123456789")] = Object{Annotations: map[string]string{pin.AnnotationCopyOf: "cfg"}, Data: gd}
	prev := template([]string{good.GetName()})     // the revision before the failed rollout
	failed := template([]string{"cfg-aaaaaaaaaa"}) // the failed one, as Reroll wrote it
	patch := revert.Patch{Before: revert.Fingerprint(prev), After: revert.Fingerprint(failed), At: now.Add(-time.Minute)}.String()
	versioned := map[string]string{pin.VersionedAnnotation: "true", revert.PatchAnnotation: patch}
	cases := map[string]struct {
		opts      func(*Options)                     // changes to the options
		failedNow string                             // the failure seen now
		annots    map[string]string                  // the workload's annotations
		current   *corev1.PodTemplateSpec            // the template now
		revisions map[string]*corev1.PodTemplateSpec // what View.Revision finds
		undo      bool                               // an Undo is planned
		event     string                             // the Event's reason; "" for none
	}{
		"a failed versioned rollout goes back to the previous pinned revision": {
			failedNow: "Progress deadline exceeded", annots: versioned, current: failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev},
			undo:      true, event: ReasonRolledBack,
		},
		"with the automatic undo off, nothing": {
			opts:      func(o *Options) { o.NoAutoUndo = true },
			failedNow: "Progress deadline exceeded", annots: versioned, current: failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev},
		},
		"no failure seen now, nothing": {
			annots: versioned, current: failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev},
		},
		"a workload not versioned, nothing": {
			failedNow: "Progress deadline exceeded", annots: map[string]string{revert.PatchAnnotation: patch}, current: failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev},
		},
		"a template changed since Reroll's rollout is left, with a Warning": {
			failedNow: "Progress deadline exceeded", annots: versioned, current: template([]string{"other"}),
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev},
			event:     ReasonNotRolledBack,
		},
		"a previous revision no longer kept is told": {
			failedNow: "Progress deadline exceeded", annots: versioned, current: failed,
			event: ReasonNotRolledBack,
		},
		"a previous revision on the source itself would read the failed content: told": {
			failedNow: "Progress deadline exceeded",
			annots: map[string]string{pin.VersionedAnnotation: "true", revert.PatchAnnotation: revert.Patch{
				Before: revert.Fingerprint(template([]string{"cfg"})), After: revert.Fingerprint(failed), At: now}.String()},
			current:   failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(template([]string{"cfg"})): template([]string{"cfg"})},
			event:     ReasonNotRolledBack,
		},
		"a previous revision naming a tenant's look-alike is no pinned revision": {
			failedNow: "Progress deadline exceeded",
			annots: map[string]string{pin.VersionedAnnotation: "true", revert.PatchAnnotation: revert.Patch{
				Before: revert.Fingerprint(template([]string{"cfg-0123456789"})), After: revert.Fingerprint(failed), At: now}.String()},
			current:   failed,
			revisions: map[string]*corev1.PodTemplateSpec{revert.Fingerprint(template([]string{"cfg-0123456789"})): template([]string{"cfg-0123456789"})},
			event:     ReasonNotRolledBack,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.Key = k
			if c.opts != nil {
				c.opts(&o)
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", Now: now, Annotations: c.annots, Template: c.current,
				Action: workload.Action{Way: workload.ByTemplate}, Restart: &RestartInput{TemplateInObject: true}}
			p := Plan{failedNow: c.failedNow, failedSets: []string{"0123456789abcdef"}}
			var calls []string
			if err := p.undoFailed(o, in, view{memory: src, calls: &calls, revisions: c.revisions}); err != nil {
				t.Fatal(err)
			}
			if (p.Undo != nil) != c.undo {
				t.Fatalf("undo = %+v, want %v", p.Undo, c.undo)
			}
			if c.undo && (p.Undo.Template != prev || len(p.Undo.Restored) != 1 || p.Undo.Restored[0] != "ConfigMap/"+good.GetName()) {
				t.Errorf("undo = %+v", p.Undo)
			}
			switch {
			case c.event == "" && len(p.Events) > 0:
				t.Errorf("events = %+v, want none", p.Events)
			case c.event != "" && !hasEventWith(p.Events, c.event, "0123456789abcdef"):
				t.Errorf("events = %+v, want %s naming the change set", p.Events, c.event)
			}
		})
	}
}

// TestPlan_UndoFailedFromATrimmedCopy checks that the automatic undo
// decides the same from a workload read from the manager's cache (its
// template trimmed by envtrim.Keep, the Sums of the full template held
// with it) as from the full workload, with a record in the form Reroll
// writes since (revert.Patch.Trimmed) and in the form before.
func TestPlan_UndoFailedFromATrimmedCopy(t *testing.T) {
	k, good, _, src := goodCopy(t)
	// full is a template as the API server returns it: an image, a
	// restart policy, labels, none of which the cache keeps.
	full := func(configMap, image string) *corev1.PodTemplateSpec {
		t := template([]string{configMap})
		t.Labels = map[string]string{"app": "web"}
		t.Spec.Containers[0].Image = image
		t.Spec.RestartPolicy = corev1.RestartPolicyAlways
		return t
	}
	prev := full(good.GetName(), "web:1")       // the revision before the failed rollout
	failed := full("cfg-aaaaaaaaaa", "web:1")   // the failed one, as Reroll wrote it
	retagged := full("cfg-aaaaaaaaaa", "web:2") // the failed one with an image changed since
	trimmed := func(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec { return envtrim.Keep(t.DeepCopy()) }
	s := revert.SumsOf(prev) // as apply.recordPatch takes them, from the workload before the rollout
	record := revert.Patch{Before: s.Full, After: s.Trimmed(failed), Trimmed: true, At: now.Add(-time.Minute)}.String()
	legacy := revert.Patch{Before: revert.Fingerprint(prev), After: revert.Fingerprint(failed), At: now.Add(-time.Minute)}.String()
	cases := map[string]struct {
		record  string                  // revert.PatchAnnotation
		current *corev1.PodTemplateSpec // the template read
		sums    revert.Sums             // the Sums held with it (zero: read from the API server)
		undo    bool                    // an Undo is planned
	}{
		"a trimmed copy of the failed template is undone": {
			record: record, current: trimmed(failed), sums: revert.SumsOf(failed), undo: true,
		},
		"the full failed template is undone": {
			record: record, current: failed, undo: true,
		},
		"a trimmed copy whose image changed since is left": {
			record: record, current: trimmed(retagged), sums: revert.SumsOf(retagged),
		},
		"the full template whose image changed since is left": {
			record: record, current: retagged,
		},
		"a record of the earlier form is undone from a trimmed copy": {
			record: legacy, current: trimmed(failed), sums: revert.SumsOf(failed), undo: true,
		},
		"a record of the earlier form is left when the image changed since": {
			record: legacy, current: trimmed(retagged), sums: revert.SumsOf(retagged),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			o.Key = k
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", Now: now, Template: c.current, TemplateSums: c.sums,
				Annotations: map[string]string{pin.VersionedAnnotation: "true", revert.PatchAnnotation: c.record},
				Action:      workload.Action{Way: workload.ByTemplate}, Restart: &RestartInput{TemplateInObject: true}}
			p := Plan{failedNow: "Progress deadline exceeded", failedSets: []string{"0123456789abcdef"}}
			var calls []string
			revisions := map[string]*corev1.PodTemplateSpec{revert.Fingerprint(prev): prev}
			if err := p.undoFailed(o, in, view{memory: src, calls: &calls, revisions: revisions}); err != nil {
				t.Fatal(err)
			}
			if (p.Undo != nil) != c.undo {
				t.Fatalf("undo = %+v, want %v (events %+v)", p.Undo, c.undo, p.Events)
			}
			want := ReasonNotRolledBack
			if c.undo {
				want = ReasonRolledBack
			}
			if !hasEventWith(p.Events, want, "0123456789abcdef") {
				t.Errorf("events = %+v, want %s", p.Events, want)
			}
		})
	}
}

// goodCopy returns a test key, Reroll's copy of ConfigMap ns/cfg with good
// content signed under it, the copy's digests, and a source holding the
// copy as the cache does (by name: its annotations and digests).
func goodCopy(t *testing.T) (digest.Key, client.Object, digest.Data, memory) {
	t.Helper()
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	good, err := pin.Build(k, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"a": "good"}})
	if err != nil {
		t.Fatal(err)
	}
	gd, _ := k.Of(good)
	return k, good, gd, memory{cm(good.GetName()): Object{Annotations: good.GetAnnotations(), Data: gd}}
}
