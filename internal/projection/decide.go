package projection

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// Reasons of the Ready and Synced conditions, also used as Event reasons.
const (
	// ReasonProjected: Ready; the Projection works.
	ReasonProjected = "Projected"
	// ReasonWritten: Synced; this reconcile wrote the target.
	ReasonWritten = "Written"
	// ReasonUpToDate: Synced; the target already held the values.
	ReasonUpToDate = "UpToDate"
	// ReasonTargetNotFound: the target does not exist (yet); Reroll reads
	// it again with a growing delay.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetKindUnknown: the API server serves no such kind (yet).
	ReasonTargetKindUnknown = "TargetKindUnknown"
	// ReasonSourceNotFound: a source that is not optional is absent.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonForbidden: the ServiceAccount may not do what the Projection
	// needs; the message names the verb and the resource.
	ReasonForbidden = "Forbidden"
	// ReasonInvalidSpec: the spec cannot be applied (paths inside one
	// another); the API server's validation catches the rest.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInvalidValue: a value cannot be written as asked (not UTF-8).
	ReasonInvalidValue = "InvalidValue"
	// ReasonTooLarge: the rendered values would exceed MaxFieldBytes or
	// MaxRenderedBytes; nothing was rendered or written.
	ReasonTooLarge = "TooLarge"
	// ReasonConflict: another field manager keeps rewriting a projected
	// field; the Projection stopped writing.
	ReasonConflict = "Conflict"
	// ReasonRewritten: Event; another field manager rewrote a projected
	// field and Reroll wrote it back.
	ReasonRewritten = "Rewritten"
	// ReasonPruned: Event; the Projection was deleted with prune: true and
	// its fields were removed from the target.
	ReasonPruned = "Pruned"
	// ReasonPruneFailed: Event; the fields could not be removed.
	ReasonPruneFailed = "PruneFailed"
)

// ConflictLimits bound how long Reroll fights another writer of a field
// (a GitOps tool that owns the same field) before it stops.
type ConflictLimits struct {
	// Rewrites is how many rewrites by another field manager are written
	// back within Window; one more stops the Projection.
	Rewrites int
	// Window is the time over which rewrites are counted.
	Window time.Duration
}

// paths parses the spec's field paths; an error when one is malformed or
// lies inside another (a field cannot be both a string and an object).
func paths(fields []rerollv1alpha1.Field) (map[string][]string, error) {
	out := make(map[string][]string, len(fields))
	for _, f := range fields {
		names, err := ParsePath(f.Path)
		if err != nil {
			return nil, err
		}
		out[f.Path] = names
	}
	for a, an := range out {
		for b, bn := range out {
			if a != b && len(an) < len(bn) && slices.Equal(an, bn[:len(an)]) {
				return nil, fmt.Errorf("path %s lies inside path %s", b, a)
			}
		}
	}
	return out, nil
}

// checkTemplates returns an error naming the first ${name} of a template
// that names no source.
func checkTemplates(spec rerollv1alpha1.ProjectionSpec) error {
	names := make(map[string]bool, len(spec.Sources))
	for _, s := range spec.Sources {
		names[s.Name] = true
	}
	for _, f := range spec.Fields {
		if f.Template == nil {
			continue
		}
		for _, m := range placeholder.FindAllStringSubmatch(*f.Template, -1) {
			if !names[m[1]] {
				return fmt.Errorf("field %s: the template uses ${%s}, which names no source", f.Path, m[1])
			}
		}
	}
	return nil
}

// desired returns the value of every field that is written now, keyed by
// path; a field whose optional source is absent is left out. A *tooLarge
// error, before anything is rendered, when the values would exceed
// MaxFieldBytes or MaxRenderedBytes.
func desired(fields []rerollv1alpha1.Field, values map[string]sourceValue, key []byte) (map[string]string, error) {
	if err := checkSizes(fields, values); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		v, ok, err := render(f, values, key)
		if err != nil {
			return nil, err
		}
		if ok {
			out[f.Path] = v
		}
	}
	return out, nil
}

// needsWrite reports whether the target differs from the desired values:
// a field holds another value, or a field Reroll wrote last time is no
// longer desired (the apply removes it). parsed holds every path's names.
func needsWrite(target *unstructured.Unstructured, want map[string]string, parsed map[string][]string, written []string) bool {
	for path, v := range want {
		if cur, ok := valueAt(target.Object, parsed[path]); !ok || cur != v {
			return true
		}
	}
	for _, path := range written {
		if _, ok := want[path]; !ok {
			return true
		}
	}
	return false
}

// rewritten returns the first path Reroll wrote that its field manager
// (manager) no longer owns, and the manager that owns it now ("" when nobody does: the
// field was removed). Another writer takes a field over when it writes a
// different value (an Update moves ownership; a forced Apply takes it);
// writing the same value only shares ownership, which is no fight.
func rewritten(target *unstructured.Unstructured, ours string, written []string) (path, manager string, found bool) {
	mf := target.GetManagedFields()
	for _, p := range written {
		names, err := ParsePath(p)
		if err != nil {
			continue
		}
		var other string
		owned := false
		for _, o := range owners(mf, names) {
			if o.Manager == ours && o.Operation == metav1.ManagedFieldsOperationApply {
				owned = true
				break
			}
			if other == "" {
				other = o.Manager
			}
		}
		if !owned {
			return p, other, true
		}
	}
	return "", "", false
}

// countRewrite returns the conflict record after one more rewrite of path by
// manager seen at now: the count grows within the window and starts again
// at 1 after it.
func countRewrite(prev *rerollv1alpha1.Conflict, path, manager string, now time.Time, limits ConflictLimits) *rerollv1alpha1.Conflict {
	if prev == nil || now.Sub(prev.WindowStart.Time) > limits.Window {
		return &rerollv1alpha1.Conflict{Manager: manager, Path: path, Count: 1, WindowStart: metav1.NewTime(now)}
	}
	next := prev.DeepCopy()
	next.Manager, next.Path = manager, path
	next.Count++
	return next
}

// conflictMessage says who rewrites what and how to end the fight.
func conflictMessage(c *rerollv1alpha1.Conflict) string {
	who := fmt.Sprintf("field manager %q", c.Manager)
	if c.Manager == "" {
		who = "another writer (the field was removed)"
	}
	return fmt.Sprintf("%s rewrote %s %d times since %s; stopped writing. Leave the field out of Git, or tell the GitOps tool to ignore it (Argo CD ignoreDifferences, Flux SSA ownership; see docs/projections.md), then edit this Projection's spec to resume",
		who, c.Path, c.Count, c.WindowStart.UTC().Format(time.RFC3339))
}

// retryAfter returns how long to wait before reading a missing target
// again: as long as it has been missing (so the cost falls off as 1/t),
// at least 2 s and at most limit.
func retryAfter(missingSince, now time.Time, limit time.Duration) time.Duration {
	return min(max(now.Sub(missingSince), 2*time.Second), limit)
}

// forbidden describes a request the ServiceAccount may not make, as RBAC
// would grant it: the verb, the resource with its group, and the namespace.
func forbidden(ns, serviceAccount, verb, resource, group, name string) string {
	if group == "" {
		group = `""`
	}
	return fmt.Sprintf("ServiceAccount %s/%s may not %s %s (API group %s) in namespace %s (%s/%s); grant it with a Role and RoleBinding",
		ns, serviceAccount, verb, resource, group, ns, resource, name)
}

// DefaultInterval is how often a Projection without spec.interval is
// checked.
const DefaultInterval = 10 * time.Minute

// checkInterval is how often a Projection whose spec.interval is spec is
// checked: spec, but never more often than min (the CRD accepts "1ms", and
// each check reads the target and the sources), DefaultInterval without
// one.
func checkInterval(spec *metav1.Duration, min time.Duration) time.Duration {
	if spec == nil || spec.Duration <= 0 {
		return DefaultInterval
	}
	return max(spec.Duration, min)
}
