package pin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/reroll/reroll/internal/reference"
)

// Ref is one ConfigMap or Secret as a pod template names it: its kind and
// the name written in the template (a source's, or a copy's).
type Ref struct {
	// Kind is reference.ConfigMap or reference.Secret.
	Kind reference.Kind
	// Name is the object's name in the workload's namespace.
	Name string
}

// String is "Kind/name".
func (r Ref) String() string { return string(r.Kind) + "/" + r.Name }

// Rewrite renames, in spec, every reference to an object of renames' keys
// to the name it maps to: env valueFrom and envFrom of containers, init
// containers and ephemeral containers, configMap and secret volumes, and
// projected volume sources (what Referenced lists). It returns how many
// references it changed; a nil spec changes none.
func Rewrite(spec *corev1.PodSpec, renames map[Ref]string) int {
	if spec == nil || len(renames) == 0 {
		return 0
	}
	n := 0
	rename := func(kind reference.Kind, name *string) {
		if to, ok := renames[Ref{Kind: kind, Name: *name}]; ok && to != *name {
			*name = to
			n++
		}
	}
	env := func(envs []corev1.EnvVar, from []corev1.EnvFromSource) {
		for i := range envs {
			if vf := envs[i].ValueFrom; vf != nil {
				if vf.ConfigMapKeyRef != nil {
					rename(reference.ConfigMap, &vf.ConfigMapKeyRef.Name)
				}
				if vf.SecretKeyRef != nil {
					rename(reference.Secret, &vf.SecretKeyRef.Name)
				}
			}
		}
		for i := range from {
			if from[i].ConfigMapRef != nil {
				rename(reference.ConfigMap, &from[i].ConfigMapRef.Name)
			}
			if from[i].SecretRef != nil {
				rename(reference.Secret, &from[i].SecretRef.Name)
			}
		}
	}
	for i := range spec.Containers {
		env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.InitContainers {
		env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		env(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil {
			rename(reference.ConfigMap, &v.ConfigMap.Name)
		}
		if v.Secret != nil {
			rename(reference.Secret, &v.Secret.SecretName)
		}
		if v.Projected != nil {
			for j := range v.Projected.Sources {
				s := &v.Projected.Sources[j]
				if s.ConfigMap != nil {
					rename(reference.ConfigMap, &s.ConfigMap.Name)
				}
				if s.Secret != nil {
					rename(reference.Secret, &s.Secret.Name)
				}
			}
		}
	}
	return n
}

// TemplateAnnotation is the pod template annotation where Reroll writes,
// beside the references it pins, which copy stands for which source
// (FormatPins): the admission webhook reads it to keep the pinned
// references through a GitOps re-apply, and the workload index to map a
// source's change to the workloads that pin it. It travels with the
// template into its ReplicaSets and ControllerRevisions, so an undo
// restores it with the references. Anyone who may write the workload may
// write it: Reroll only trusts a copy that Verify proves.
const TemplateAnnotation = "reroll.dev/pinned"

// MaxPins is the most entries ParsePins reads.
const MaxPins = 256

// FormatPins returns the value of TemplateAnnotation for pins, each source
// to the copy the template names for it: "Kind/source=copy" entries,
// sorted, separated by commas; "" for none.
func FormatPins(pins map[Ref]string) string {
	entries := make([]string, 0, len(pins))
	for _, src := range slices.SortedFunc(maps.Keys(pins), compareRefs) {
		entries = append(entries, src.String()+"="+pins[src])
	}
	return strings.Join(entries, ",")
}

func compareRefs(a, b Ref) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// ParsePins reads a value of TemplateAnnotation into each source and the
// copy named for it. It returns an error, naming the entry, for an entry
// that is not "ConfigMap/name=copy" or "Secret/name=copy" with valid names
// of which the copy is named for the source, and for more than MaxPins
// entries; "" yields none.
func ParsePins(v string) (map[Ref]string, error) {
	if v == "" {
		return nil, nil
	}
	entries := strings.Split(v, ",")
	if len(entries) > MaxPins {
		return nil, fmt.Errorf("annotation %s has %d entries, more than %d", TemplateAnnotation, len(entries), MaxPins)
	}
	out := make(map[Ref]string, len(entries))
	for i, e := range entries {
		src, copyName, ok := strings.Cut(e, "=")
		kind, name, ok2 := strings.Cut(src, "/")
		if !ok || !ok2 || (kind != string(reference.ConfigMap) && kind != string(reference.Secret)) ||
			len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsDNS1123Subdomain(copyName)) > 0 || !nameOf(copyName, name) {
			return nil, fmt.Errorf("annotation %s: entry %s is not Kind/source=copy", TemplateAnnotation, strconv.Itoa(i+1))
		}
		out[Ref{Kind: reference.Kind(kind), Name: name}] = copyName
	}
	return out, nil
}

// VersionedAnnotation opts a workload, or every workload of a Namespace,
// in ("true") or out ("false") of versioned config; the workload's wins.
const VersionedAnnotation = "reroll.dev/versioned"

// Versioned reports whether a workload pins: VersionedAnnotation of the
// workload's annotations, else of its Namespace's, else def (the cluster
// default, --versioned-config). A value other than "true" or "false" is
// ignored with an error naming where it is.
func Versioned(workload, namespace map[string]string, def bool) (bool, []error) {
	var errs []error
	for _, a := range []struct {
		where string
		m     map[string]string
	}{{"workload", workload}, {"namespace", namespace}} {
		v, ok := a.m[VersionedAnnotation]
		if !ok {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false") {
			errs = append(errs, fmt.Errorf("annotation %s on the %s: %q is not true or false", VersionedAnnotation, a.where, v))
			continue
		}
		return b, errs
	}
	return def, errs
}
