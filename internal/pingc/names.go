package pingc

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/reference"
)

// NamesOf returns every ConfigMap and Secret that spec names, wherever it
// names them: env valueFrom and envFrom of containers, init containers and
// ephemeral containers, volumes (configMap, secret, projected sources, and
// the Secrets that CSI, FlexVolume, iSCSI, RBD, CephFS, ScaleIO, StorageOS,
// Azure File and Cinder volumes name for credentials), and
// imagePullSecrets. Wider than what pinning rewrites, on purpose: a name
// the collector misses is a copy deleted in use. A nil spec names nothing.
func NamesOf(spec *corev1.PodSpec) Names {
	var n Names
	addPodSpec(&n, spec)
	return n
}

func addPodSpec(n *Names, spec *corev1.PodSpec) {
	if spec == nil {
		return
	}
	containers := func(cs []corev1.Container) {
		for i := range cs {
			addEnv(n, cs[i].Env, cs[i].EnvFrom)
		}
	}
	containers(spec.InitContainers)
	containers(spec.Containers)
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		addEnv(n, c.Env, c.EnvFrom)
	}
	for _, s := range spec.ImagePullSecrets {
		n.Add(reference.Secret, s.Name)
	}
	for i := range spec.Volumes {
		addVolume(n, &spec.Volumes[i].VolumeSource)
	}
}

func addEnv(n *Names, env []corev1.EnvVar, from []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			n.Add(reference.ConfigMap, r.Name)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			n.Add(reference.Secret, r.Name)
		}
	}
	for _, f := range from {
		if f.ConfigMapRef != nil {
			n.Add(reference.ConfigMap, f.ConfigMapRef.Name)
		}
		if f.SecretRef != nil {
			n.Add(reference.Secret, f.SecretRef.Name)
		}
	}
}

func addVolume(n *Names, v *corev1.VolumeSource) {
	secretRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			n.Add(reference.Secret, r.Name)
		}
	}
	if v.ConfigMap != nil {
		n.Add(reference.ConfigMap, v.ConfigMap.Name)
	}
	if v.Secret != nil {
		n.Add(reference.Secret, v.Secret.SecretName)
	}
	if p := v.Projected; p != nil {
		for _, s := range p.Sources {
			if s.ConfigMap != nil {
				n.Add(reference.ConfigMap, s.ConfigMap.Name)
			}
			if s.Secret != nil {
				n.Add(reference.Secret, s.Secret.Name)
			}
		}
	}
	if v.CSI != nil {
		secretRef(v.CSI.NodePublishSecretRef)
	}
	if v.FlexVolume != nil {
		secretRef(v.FlexVolume.SecretRef)
	}
	if v.ISCSI != nil {
		secretRef(v.ISCSI.SecretRef)
	}
	if v.RBD != nil {
		secretRef(v.RBD.SecretRef)
	}
	if v.CephFS != nil {
		secretRef(v.CephFS.SecretRef)
	}
	if v.ScaleIO != nil {
		secretRef(v.ScaleIO.SecretRef)
	}
	if v.StorageOS != nil {
		secretRef(v.StorageOS.SecretRef)
	}
	if v.Cinder != nil {
		secretRef(v.Cinder.SecretRef)
	}
	if v.AzureFile != nil {
		n.Add(reference.Secret, v.AzureFile.SecretName)
	}
}
