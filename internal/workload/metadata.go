package workload

import "sigs.k8s.io/controller-runtime/pkg/client"

// SetAnnotation sets a metadata annotation of obj, or removes it when value
// is "": the form of every write of Reroll's state annotations, by the
// reconciler and by the admission webhook alike.
func SetAnnotation(obj client.Object, key, value string) {
	obj.SetAnnotations(WithKey(obj.GetAnnotations(), key, value))
}

// SetLabel sets a metadata label of obj, or removes it when value is "".
func SetLabel(obj client.Object, key, value string) {
	obj.SetLabels(WithKey(obj.GetLabels(), key, value))
}

// WithKey returns m with key set to value, or without key when value is "";
// it allocates a map only when m is nil and a value is set.
func WithKey(m map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(m, key)
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
