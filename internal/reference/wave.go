package reference

import corev1 "k8s.io/api/core/v1"

// ForWave returns the references that Wave (wave.pusher.com) hashes, which
// differ from the kubelet's view in two ways: a configMap or secret volume
// counts every key of the object, whatever its items say (projected sources
// still count their items' keys), and init containers are not read at all.
// The result has FromPodTemplate's shape and order.
func ForWave(t *corev1.PodTemplateSpec) []Reference {
	if t == nil {
		return nil
	}
	c := t.DeepCopy()
	c.Spec.InitContainers = nil
	for i := range c.Spec.Volumes {
		if v := c.Spec.Volumes[i].ConfigMap; v != nil {
			v.Items = nil
		}
		if v := c.Spec.Volumes[i].Secret; v != nil {
			v.Items = nil
		}
	}
	return FromPodTemplate(c)
}
