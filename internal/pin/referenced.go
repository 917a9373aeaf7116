package pin

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Referenced returns the names of the ConfigMaps and of the Secrets that
// spec names through what a copy can stand for, each sorted and without
// duplicates: env valueFrom and envFrom of containers, init containers and
// ephemeral containers, configMap and secret volumes, and the sources of
// projected volumes. Image pull Secrets and CSI volumes are left out: Reroll
// never pins them. A nil spec names nothing. It serves whoever must know
// which copies a Pod, ReplicaSet, ControllerRevision or Job still names
// (the garbage collection of copies): any name it returns may be a copy.
func Referenced(spec *corev1.PodSpec) (configMaps, secrets []string) {
	if spec == nil {
		return nil, nil
	}
	env := func(envs []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range envs {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				configMaps = append(configMaps, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				secrets = append(secrets, r.Name)
			}
		}
		for _, f := range from {
			if f.ConfigMapRef != nil {
				configMaps = append(configMaps, f.ConfigMapRef.Name)
			}
			if f.SecretRef != nil {
				secrets = append(secrets, f.SecretRef.Name)
			}
		}
	}
	for _, c := range spec.Containers {
		env(c.Env, c.EnvFrom)
	}
	for _, c := range spec.InitContainers {
		env(c.Env, c.EnvFrom)
	}
	for _, c := range spec.EphemeralContainers {
		env(c.Env, c.EnvFrom)
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			configMaps = append(configMaps, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			secrets = append(secrets, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					configMaps = append(configMaps, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					secrets = append(secrets, s.Secret.Name)
				}
			}
		}
	}
	return clean(configMaps), clean(secrets)
}

// clean sorts names, drops duplicates and empty names.
func clean(names []string) []string {
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 0 && names[0] == "" {
		names = names[1:]
	}
	if len(names) == 0 {
		return nil
	}
	return names
}
