package reference

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a referenced object: ConfigMap or Secret.
type Kind string

const (
	// ConfigMap is the kind of a core/v1 ConfigMap.
	ConfigMap Kind = "ConfigMap"
	// Secret is the kind of a core/v1 Secret.
	Secret Kind = "Secret"
	// SecretProviderClass is the kind of a Secrets Store CSI Driver
	// SecretProviderClass (secrets-store.csi.x-k8s.io/v1) that a CSI volume
	// mounts. Its data are the versions of the objects the driver mounted,
	// as its SecretProviderClassPodStatus objects record them.
	SecretProviderClass Kind = "SecretProviderClass"
)

// CSIDriver is the name of the Secrets Store CSI Driver, and
// CSIProviderClassAttribute the volume attribute naming the
// SecretProviderClass a CSI volume mounts.
const (
	CSIDriver                 = "secrets-store.csi.k8s.io"
	CSIProviderClassAttribute = "secretProviderClass"
)

// SecretProviderClasses returns the SecretProviderClasses the pod template
// mounts through Secrets Store CSI Driver volumes (driver
// secrets-store.csi.k8s.io, volumeAttributes.secretProviderClass), as
// Reloader finds them: one Reference per class, sorted by name, each with
// All set (every mounted object counts) and the containers that mount the
// volume. They are not part of FromPodTemplate, which lists what the API
// server resolves for the pod: only --enable-csi-integration reads these.
func SecretProviderClasses(t *corev1.PodTemplateSpec) []Reference {
	if t == nil {
		return nil
	}
	c := collector{byID: map[string]*Reference{}, readers: map[string]map[string]bool{}}
	containers := make([]corev1.Container, 0, len(t.Spec.Containers)+len(t.Spec.InitContainers))
	containers = append(containers, t.Spec.Containers...)
	containers = append(containers, t.Spec.InitContainers...)
	for _, vol := range t.Spec.Volumes {
		if vol.CSI == nil || vol.CSI.Driver != CSIDriver {
			continue
		}
		var readers []string
		for _, ctr := range containers {
			for _, m := range ctr.VolumeMounts {
				if m.Name == vol.Name {
					readers = append(readers, ctr.Name)
				}
			}
		}
		c.add(SecretProviderClass, vol.CSI.VolumeAttributes[CSIProviderClassAttribute], false, true, nil, readers...)
	}
	return c.list(containers)
}

// Reference is one ConfigMap or Secret that a pod template consumes, in the
// namespace of the workload (pod templates cannot reference other namespaces).
type Reference struct {
	// Kind is ConfigMap or Secret.
	Kind Kind
	// Namespace is set only for an object outside the workload's namespace
	// (Wave's extra-configmaps "namespace/name" entries); pod templates
	// themselves reference their own namespace only.
	Namespace string
	// Name is the object's name.
	Name string
	// Optional is true when every reference to the object is marked
	// optional, so the pods start without it (or without its keys).
	Optional bool
	// All is true when every key of the object is consumed (envFrom, or a
	// volume without items). Keys is then nil.
	All bool
	// Keys lists the consumed keys, sorted and without duplicates, when All
	// is false.
	Keys []string
	// Containers names the containers that read the object through env,
	// envFrom or a volume mount: regular containers first, in spec order,
	// then init containers. It is empty when only an unmounted volume refers
	// to the object.
	Containers []string
}

// ID returns "Kind/name", or "Kind/namespace/name" for an object in another
// namespace: the form used in Reroll's records and Events.
func (r Reference) ID() string {
	if r.Namespace != "" {
		return string(r.Kind) + "/" + r.Namespace + "/" + r.Name
	}
	return string(r.Kind) + "/" + r.Name
}

// Consumes reports whether key is one of the keys the reference reads.
func (r Reference) Consumes(key string) bool {
	if r.All {
		return true
	}
	_, found := slices.BinarySearch(r.Keys, key)
	return found
}

// FromPodTemplate returns every ConfigMap and Secret that the pod template
// consumes, one Reference per object, sorted by kind and then by name. Two
// references to the same object merge: the union of their keys, or All when
// either reads the whole object. A nil template yields nil.
func FromPodTemplate(t *corev1.PodTemplateSpec) []Reference {
	if t == nil {
		return nil
	}
	c := collector{byID: map[string]*Reference{}, readers: map[string]map[string]bool{}}
	spec := &t.Spec

	// Which volumes each container mounts, to attribute volume references to
	// containers.
	volumeReaders := map[string][]string{}
	containers := make([]corev1.Container, 0, len(spec.Containers)+len(spec.InitContainers))
	containers = append(containers, spec.Containers...)
	containers = append(containers, spec.InitContainers...)
	for _, ctr := range containers {
		for _, m := range ctr.VolumeMounts {
			volumeReaders[m.Name] = append(volumeReaders[m.Name], ctr.Name)
		}
	}

	for _, ctr := range containers {
		for _, env := range ctr.Env {
			if env.ValueFrom == nil {
				continue
			}
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
				c.add(ConfigMap, ref.Name, isTrue(ref.Optional), false, []string{ref.Key}, ctr.Name)
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil {
				c.add(Secret, ref.Name, isTrue(ref.Optional), false, []string{ref.Key}, ctr.Name)
			}
		}
		for _, from := range ctr.EnvFrom {
			if from.ConfigMapRef != nil {
				c.add(ConfigMap, from.ConfigMapRef.Name, isTrue(from.ConfigMapRef.Optional), true, nil, ctr.Name)
			}
			if from.SecretRef != nil {
				c.add(Secret, from.SecretRef.Name, isTrue(from.SecretRef.Optional), true, nil, ctr.Name)
			}
		}
	}

	for _, vol := range spec.Volumes {
		readers := volumeReaders[vol.Name]
		if cm := vol.ConfigMap; cm != nil {
			c.addItems(ConfigMap, cm.Name, isTrue(cm.Optional), cm.Items, readers)
		}
		if s := vol.Secret; s != nil {
			c.addItems(Secret, s.SecretName, isTrue(s.Optional), s.Items, readers)
		}
		if p := vol.Projected; p != nil {
			for _, src := range p.Sources {
				if cm := src.ConfigMap; cm != nil {
					c.addItems(ConfigMap, cm.Name, isTrue(cm.Optional), cm.Items, readers)
				}
				if s := src.Secret; s != nil {
					c.addItems(Secret, s.Name, isTrue(s.Optional), s.Items, readers)
				}
			}
		}
	}
	return c.list(containers)
}

type collector struct {
	byID map[string]*Reference
	// readers collects container names per reference before they are put in
	// spec order.
	readers map[string]map[string]bool
}

func (c *collector) addItems(kind Kind, name string, optional bool, items []corev1.KeyToPath, readers []string) {
	// An empty items list projects every key, as the kubelet does.
	if len(items) == 0 {
		c.add(kind, name, optional, true, nil, readers...)
		return
	}
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	c.add(kind, name, optional, false, keys, readers...)
}

func (c *collector) add(kind Kind, name string, optional, all bool, keys []string, containers ...string) {
	// An empty name is invalid in the API; nothing can be resolved from it.
	if name == "" {
		return
	}
	id := string(kind) + "/" + name
	r, ok := c.byID[id]
	if !ok {
		r = &Reference{Kind: kind, Name: name, Optional: true}
		c.byID[id] = r
	}
	r.Optional = r.Optional && optional
	if all {
		r.All = true
		r.Keys = nil
	} else if !r.All {
		r.Keys = append(r.Keys, keys...)
	}
	if c.readers[id] == nil {
		c.readers[id] = map[string]bool{}
	}
	for _, n := range containers {
		c.readers[id][n] = true
	}
}

func (c *collector) list(containers []corev1.Container) []Reference {
	if len(c.byID) == 0 {
		return nil
	}
	out := make([]Reference, 0, len(c.byID))
	for id, r := range c.byID {
		if !r.All {
			sort.Strings(r.Keys)
			r.Keys = slices.Compact(r.Keys)
		}
		// containers holds regular containers before init containers, in
		// spec order; that order is the one Reroll's env-vars trigger uses.
		for _, ctr := range containers {
			if c.readers[id][ctr.Name] && !slices.Contains(r.Containers, ctr.Name) {
				r.Containers = append(r.Containers, ctr.Name)
			}
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }
