package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
)

// rotationReport is `status configmap/NAME|secret/NAME`'s answer: each
// version (copy) of a source of versioned config, and the workloads and
// pods still on it.
type rotationReport struct {
	// Object is KIND/NAME of the source, in Namespace.
	Object    string `json:"object"`
	Namespace string `json:"namespace"`
	// Versions are its copies, the current one first, then the previous
	// ones, newest first.
	Versions []rotationVersion `json:"versions"`
	Notes    []string          `json:"notes,omitempty"`
}

// rotationVersion is one copy of the source.
type rotationVersion struct {
	// Copy is the copy's name (the source's name and a keyed digest of
	// its content: no value).
	Copy    string    `json:"copy"`
	Created time.Time `json:"created"`
	// State is "current" (no rotation recorded: Reroll takes it for the
	// source's content), "previous" (superseded, pods still on it) or
	// "converged" (no pod on it any more), as Reroll recorded on the copy
	// (reroll.dev/rotation; the plugin cannot check its signature).
	State string `json:"state"`
	// Since and Converged are the record's times, when recorded.
	Since     *time.Time `json:"since,omitempty"`
	Converged *time.Time `json:"converged,omitempty"`
	// Workloads are the workloads whose pods name the copy (KIND/NAME, the
	// pod's controller followed through a ReplicaSet to its owner); Pods
	// the running or pending pods that name it.
	Workloads []string `json:"workloads"`
	Pods      []string `json:"pods"`
}

// rotationAnnotation and rotationRecord are the rotation record that
// Reroll writes on a copy (pingc.AnnotationRotation, pingc.Record), read
// here without importing internal/pingc: the plugin links no reconciler
// (TestPlugin_DoesNotLinkTheReconciler).
const rotationAnnotation = "reroll.dev/rotation"

type rotationRecord struct {
	Since     time.Time `json:"since"`
	Converged time.Time `json:"converged,omitzero"`
}

// Version states.
const (
	versionCurrent   = "current"
	versionPrevious  = "previous"
	versionConverged = "converged"
)

// rotation reads the copies of kind namespace/name (metadata only, by
// their label, and their source annotation), the pods of the namespace
// and the ReplicaSets' metadata (to name a pod's workload), and reports
// each version.
func (s *session) rotation(ctx context.Context, kind reference.Kind, name string) (rotationReport, error) {
	if s.namespace == "" {
		return rotationReport{}, fmt.Errorf("status %s/%s: give the namespace with -n (not -A)", kind, name)
	}
	copies := &metav1.PartialObjectMetadataList{}
	copies.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(kind) + "List"))
	if err := s.client.List(ctx, copies, client.InNamespace(s.namespace), client.MatchingLabels{pin.LabelCopyOf: pin.SourceLabelValue(name)}); err != nil {
		return rotationReport{}, fmt.Errorf("listing the copies of %s %s/%s: %w", kind, s.namespace, name, err)
	}
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.InNamespace(s.namespace)); err != nil {
		return rotationReport{}, fmt.Errorf("listing the pods of %s: %w", s.namespace, err)
	}
	sets := &metav1.PartialObjectMetadataList{}
	sets.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSetList"))
	if err := s.client.List(ctx, sets, client.InNamespace(s.namespace)); err != nil {
		return rotationReport{}, fmt.Errorf("listing the ReplicaSets of %s: %w", s.namespace, err)
	}
	return rotationOf(kind, s.namespace, name, copies.Items, pods.Items, sets.Items), nil
}

// rotationOf is rotation's report from what it read: copies (metadata),
// pods, and the ReplicaSets' metadata. Pure.
func rotationOf(kind reference.Kind, namespace, name string, copies []metav1.PartialObjectMetadata, pods []corev1.Pod, sets []metav1.PartialObjectMetadata) rotationReport {
	r := rotationReport{Object: string(kind) + "/" + name, Namespace: namespace, Versions: []rotationVersion{}}
	owner := map[string]string{}
	for _, rs := range sets {
		if c := metav1.GetControllerOf(&rs); c != nil {
			owner[rs.Name] = c.Kind + "/" + c.Name
		}
	}
	for _, c := range copies {
		if c.Annotations[pin.AnnotationCopyOf] != name {
			continue
		}
		v := rotationVersion{Copy: c.Name, Created: c.CreationTimestamp.UTC(), State: versionCurrent, Workloads: []string{}, Pods: []string{}}
		if raw, ok := c.Annotations[rotationAnnotation]; ok {
			var rec rotationRecord
			if json.Unmarshal([]byte(raw), &rec) == nil {
				v.State = versionPrevious
				v.Since = ptrTime(rec.Since)
				if !rec.Converged.IsZero() {
					v.State, v.Converged = versionConverged, ptrTime(rec.Converged)
				}
			}
		}
		for i := range pods {
			p := &pods[i]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !names(&p.Spec, kind, c.Name) {
				continue
			}
			v.Pods = append(v.Pods, p.Name)
			w := "Pod/" + p.Name
			if ref := metav1.GetControllerOf(p); ref != nil {
				w = ref.Kind + "/" + ref.Name
				if ref.Kind == "ReplicaSet" && owner[ref.Name] != "" {
					w = owner[ref.Name]
				}
			}
			if !slices.Contains(v.Workloads, w) {
				v.Workloads = append(v.Workloads, w)
			}
		}
		sort.Strings(v.Pods)
		sort.Strings(v.Workloads)
		r.Versions = append(r.Versions, v)
	}
	sort.SliceStable(r.Versions, func(i, j int) bool {
		a, b := r.Versions[i], r.Versions[j]
		if (a.State == versionCurrent) != (b.State == versionCurrent) {
			return a.State == versionCurrent
		}
		return a.Created.After(b.Created)
	})
	if len(r.Versions) == 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s %s/%s has no copies: no versioned workload consumes it (docs/operations.md#copies-of-versioned-config)", kind, namespace, name))
	}
	return r
}

func ptrTime(t time.Time) *time.Time {
	t = t.UTC()
	return &t
}

// objectRefs lists the copies.
func (r rotationReport) objectRefs() []objectRef {
	kind, _, _ := strings.Cut(r.Object, "/")
	out := make([]objectRef, 0, len(r.Versions))
	for _, v := range r.Versions {
		out = append(out, objectRef{gvk: corev1.SchemeGroupVersion.WithKind(kind), namespace: r.Namespace, name: v.Copy})
	}
	return out
}

// write prints the report as a table: a row per version, with its age,
// state, the record's times, and the workloads and pods on it (-o wide
// names the pods; otherwise their number).
func (r rotationReport) write(w io.Writer, wide bool, now time.Time) error {
	fmt.Fprintf(w, "%s in %s\n", r.Object, r.Namespace)
	cols := []string{"VERSION", "AGE", "STATE", "SINCE", "CONVERGED", "WORKLOADS", "PODS"}
	t := newTable(w, cols...)
	ago := func(p *time.Time) string {
		if p == nil {
			return ""
		}
		return duration.HumanDuration(now.Sub(*p)) + " ago"
	}
	for _, v := range r.Versions {
		pods := strconv.Itoa(len(v.Pods))
		if wide && len(v.Pods) > 0 {
			pods = list(v.Pods)
		}
		t.row(v.Copy, duration.HumanDuration(now.Sub(v.Created)), v.State, ago(v.Since), ago(v.Converged), list(v.Workloads), pods)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "Note:", n)
	}
	return nil
}

// rotationStatus runs `status configmap/NAME|secret/NAME`.
func rotationStatus(ctx context.Context, o *Options, out *output, arg string) error {
	kind, name, err := parseObjectArg(arg)
	if err != nil {
		return err
	}
	s, err := newSession(o)
	if err != nil {
		return err
	}
	r, err := s.rotation(ctx, kind, name)
	if err != nil {
		return err
	}
	if err := s.health.verdict(); err != nil {
		return err
	}
	if out.table() {
		return r.write(o.Out, out.wide(), time.Now())
	}
	return out.print(o.Out, "RotationStatus", r)
}

// names reports whether spec names the object kind/name where a copy can
// stand for its source (pin.Referenced).
func names(spec *corev1.PodSpec, kind reference.Kind, name string) bool {
	configMaps, secrets := pin.Referenced(spec)
	if kind == reference.Secret {
		return slices.Contains(secrets, name)
	}
	return slices.Contains(configMaps, name)
}
