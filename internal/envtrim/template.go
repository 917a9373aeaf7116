package envtrim

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keep reduces t, a pod template of a Deployment, StatefulSet or DaemonSet
// in the manager's cache, to what Reroll reads of it, and returns t:
//
//   - metadata.annotations: the trigger of the annotations strategy
//     (trigger), pin.TemplateAnnotation, the opt-in annotations that
//     Reloader reads on a template (plan, annotation.Config.Parse);
//   - of every container, init container and ephemeral container: name,
//     env (long values as Values keeps them), envFrom and volumeMounts:
//     the references (reference.FromPodTemplate, the field index, the
//     versioned config's pins and their rewrite, the garbage collection of
//     copies) and the trigger of the env-vars strategy, which goes into the
//     container a reference names;
//   - spec.volumes, whole: ConfigMap, Secret, projected and CSI
//     (SecretProviderClass) references, and the volumes that mounts name;
//   - spec.imagePullSecrets: Secrets that the garbage collection of copies
//     must see named.
//
// Everything else goes: the template's labels and other metadata, images,
// commands, arguments, ports, resources, probes, lifecycle hooks, security
// contexts, and every pod-level field but those (service account,
// scheduling, DNS, restart policy...). Nothing Reroll decides reads them,
// and Reroll writes these kinds only by strategic merge patches between
// two cached copies (workload.Patch), which leave a field that neither copy
// holds as the API server has it. revert.Sums fingerprints the full
// template before Keep, so that revert detection still tells any two
// templates apart.
//
// Keep is idempotent, and Kept(t) reports whether t is its own Keep.
func Keep(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	Values(&t.Spec)
	return KeepFields(t)
}

// KeepFields is Keep without Values: long env values stay whole. It is for
// a full template written over a cached copy (the automatic undo of a
// failed rollout writes back a revision), so that the patch between the
// two sets only what the cached copy holds, with true values.
func KeepFields(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	s := &t.Spec
	*t = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: t.Annotations},
		Spec: corev1.PodSpec{
			InitContainers: keepContainers(s.InitContainers), Containers: keepContainers(s.Containers),
			EphemeralContainers: keepEphemeral(s.EphemeralContainers),
			Volumes:             s.Volumes, ImagePullSecrets: s.ImagePullSecrets,
		},
	}
	return t
}

// Kept reports whether Keep would leave t as it is: t holds nothing but
// what Keep keeps. A template read from the API server never is: the API
// server defaults a template's restartPolicy, dnsPolicy and schedulerName,
// and a container's image is required.
func Kept(t *corev1.PodTemplateSpec) bool {
	// Each part, with what Keep keeps cleared, on a shallow copy, must be
	// zero: no deep copy and no deep comparison (Kept runs on each
	// reconcile that reads revert.Sums, and on each event in the cache).
	m := t.ObjectMeta
	m.Annotations = nil
	s := t.Spec
	s.InitContainers, s.Containers, s.EphemeralContainers, s.Volumes, s.ImagePullSecrets = nil, nil, nil, nil, nil
	if !zero(&m) || !zero(&s) {
		return false
	}
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			c := cs[i]
			if longValue(c.Env) {
				return false
			}
			c.Name, c.Env, c.EnvFrom, c.VolumeMounts = "", nil, nil, nil
			if !zero(&c) {
				return false
			}
		}
	}
	for i := range t.Spec.EphemeralContainers {
		c := t.Spec.EphemeralContainers[i]
		c.Name, c.Env, c.EnvFrom, c.VolumeMounts = "", nil, nil, nil
		if !zero(&c) {
			return false
		}
	}
	return true
}

// zero reports whether *p is its type's zero value.
func zero[T any](p *T) bool { return reflect.ValueOf(p).Elem().IsZero() }

// View returns what Keep would leave of t, without changing t: a new
// template that shares t's maps and slices where Keep keeps them whole
// (annotations, env lists without a long value, envFrom, volume mounts,
// volumes, image pull secrets). Read it, never change it.
func View(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	view := func(cs []corev1.Container) []corev1.Container {
		if cs == nil {
			return nil
		}
		out := make([]corev1.Container, len(cs))
		for i := range cs {
			c := &cs[i]
			env := c.Env
			if longValue(env) {
				env = append([]corev1.EnvVar(nil), env...)
				s := corev1.PodSpec{Containers: []corev1.Container{{Env: env}}}
				Values(&s)
			}
			out[i] = corev1.Container{Name: c.Name, Env: env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts}
		}
		return out
	}
	var eph []corev1.EphemeralContainer
	if t.Spec.EphemeralContainers != nil {
		eph = make([]corev1.EphemeralContainer, len(t.Spec.EphemeralContainers))
		for i := range t.Spec.EphemeralContainers {
			c := &t.Spec.EphemeralContainers[i].EphemeralContainerCommon
			eph[i] = corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts}}
		}
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: t.Annotations},
		Spec: corev1.PodSpec{InitContainers: view(t.Spec.InitContainers), Containers: view(t.Spec.Containers),
			EphemeralContainers: eph, Volumes: t.Spec.Volumes, ImagePullSecrets: t.Spec.ImagePullSecrets},
	}
}

// longValue reports whether an env value is longer than MaxValue.
func longValue(env []corev1.EnvVar) bool {
	for i := range env {
		if len(env[i].Value) > MaxValue {
			return true
		}
	}
	return false
}

// keepContainers reduces each container of cs, in place, to its name, env,
// envFrom and volumeMounts; nil stays nil.
func keepContainers(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		c := &cs[i]
		*c = corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts}
	}
	return cs
}

// keepEphemeral is keepContainers for ephemeral containers.
func keepEphemeral(cs []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	for i := range cs {
		c := &cs[i].EphemeralContainerCommon
		cs[i] = corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts}}
	}
	return cs
}

// Over returns the template to write over a workload whose template is
// current, to put back prev, a full template (a revision the automatic
// undo of a failed rollout writes back): prev itself over a full template,
// KeepFields of prev over a cached copy (Kept). prev is not changed. The
// patch from a cached copy then sets what the copy holds and nothing else;
// the rest of prev must be the rest of current, as the undo checks by the
// fingerprints of both (revert.Sums).
func Over(current, prev *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := prev.DeepCopy()
	if Kept(current) {
		KeepFields(out)
	}
	return out
}
