package reference

import corev1 "k8s.io/api/core/v1"

// Via is the way a pod template reads a ConfigMap or Secret.
type Via string

const (
	// ViaEnv is env[].valueFrom.configMapKeyRef or secretKeyRef: one key.
	ViaEnv Via = "env"
	// ViaEnvFrom is envFrom[].configMapRef or secretRef: every key.
	ViaEnvFrom Via = "envFrom"
	// ViaVolume is a configMap or secret volume: its items' keys, or every
	// key without items.
	ViaVolume Via = "volume"
	// ViaProjected is a source of a projected volume, like ViaVolume.
	ViaProjected Via = "projected"
)

// Source is one place in a pod template that reads an object: what
// FromPodTemplate merges into one Reference, kept apart so that a person can
// be told where each key comes from.
type Source struct {
	// Via is how the object is read.
	Via Via
	// Container is the container that reads it (env, envFrom), or the
	// volume's name (volume, projected).
	Container string
	// Keys are the keys read, in spec order; nil means every key.
	Keys []string
	// Optional is the reference's optional flag.
	Optional bool
	// Init is true for an init container (env, envFrom).
	Init bool
}

// SourcesOf returns every place in t that reads the object kind/name, in
// spec order: containers, then init containers, then volumes. A nil
// template yields nil.
func SourcesOf(t *corev1.PodTemplateSpec, kind Kind, name string) []Source {
	if t == nil || name == "" {
		return nil
	}
	var out []Source
	read := func(ctrs []corev1.Container, init bool) {
		for _, ctr := range ctrs {
			for _, env := range ctr.Env {
				if env.ValueFrom == nil {
					continue
				}
				if r := env.ValueFrom.ConfigMapKeyRef; r != nil && kind == ConfigMap && r.Name == name {
					out = append(out, Source{Via: ViaEnv, Container: ctr.Name, Keys: []string{r.Key}, Optional: isTrue(r.Optional), Init: init})
				}
				if r := env.ValueFrom.SecretKeyRef; r != nil && kind == Secret && r.Name == name {
					out = append(out, Source{Via: ViaEnv, Container: ctr.Name, Keys: []string{r.Key}, Optional: isTrue(r.Optional), Init: init})
				}
			}
			for _, from := range ctr.EnvFrom {
				if r := from.ConfigMapRef; r != nil && kind == ConfigMap && r.Name == name {
					out = append(out, Source{Via: ViaEnvFrom, Container: ctr.Name, Optional: isTrue(r.Optional), Init: init})
				}
				if r := from.SecretRef; r != nil && kind == Secret && r.Name == name {
					out = append(out, Source{Via: ViaEnvFrom, Container: ctr.Name, Optional: isTrue(r.Optional), Init: init})
				}
			}
		}
	}
	read(t.Spec.Containers, false)
	read(t.Spec.InitContainers, true)
	for _, vol := range t.Spec.Volumes {
		if cm := vol.ConfigMap; cm != nil && kind == ConfigMap && cm.Name == name {
			out = append(out, Source{Via: ViaVolume, Container: vol.Name, Keys: itemKeys(cm.Items), Optional: isTrue(cm.Optional)})
		}
		if s := vol.Secret; s != nil && kind == Secret && s.SecretName == name {
			out = append(out, Source{Via: ViaVolume, Container: vol.Name, Keys: itemKeys(s.Items), Optional: isTrue(s.Optional)})
		}
		if p := vol.Projected; p != nil {
			for _, src := range p.Sources {
				if cm := src.ConfigMap; cm != nil && kind == ConfigMap && cm.Name == name {
					out = append(out, Source{Via: ViaProjected, Container: vol.Name, Keys: itemKeys(cm.Items), Optional: isTrue(cm.Optional)})
				}
				if s := src.Secret; s != nil && kind == Secret && s.Name == name {
					out = append(out, Source{Via: ViaProjected, Container: vol.Name, Keys: itemKeys(s.Items), Optional: isTrue(s.Optional)})
				}
			}
		}
	}
	return out
}

// itemKeys returns the keys of a volume's items; nil (every key) without
// items, as the kubelet projects them.
func itemKeys(items []corev1.KeyToPath) []string {
	if len(items) == 0 {
		return nil
	}
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}
