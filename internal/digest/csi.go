package digest

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
)

// writtenAtKey is the annotation under which transformCSI keeps the time of
// the last write of a SecretProviderClassPodStatus, read from its
// managedFields before they are dropped. No object from the API server can
// carry it: ":" is not allowed in an annotation name.
const writtenAtKey = "reroll.dev:written-at"

// transformCSI reduces a cached SecretProviderClassPodStatus (one per pod
// and SecretProviderClass, written by the Secrets Store CSI Driver) to what
// Reroll reads: its name, namespace, uid, resourceVersion and creation time,
// the time of its last write, the SecretProviderClass name and the ID and
// version of each mounted object. Nothing of the secrets themselves is in
// the object. It is idempotent.
func transformCSI(o *csiv1.SecretProviderClassPodStatus) {
	written := o.Annotations[writtenAtKey]
	for _, f := range o.ManagedFields {
		if f.Time != nil {
			if t := f.Time.UTC().Format(time.RFC3339); t > written {
				written = t
			}
		}
	}
	if written == "" {
		written = o.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	o.ObjectMeta = metav1.ObjectMeta{
		Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion,
		CreationTimestamp: o.CreationTimestamp, Annotations: map[string]string{writtenAtKey: written},
	}
	o.Status = csiv1.SecretProviderClassPodStatusStatus{
		SecretProviderClassName: o.Status.SecretProviderClassName,
		Objects:                 o.Status.Objects,
	}
}

// WrittenAt returns when a cached SecretProviderClassPodStatus was last
// written (RFC 3339, second precision): the latest time in its managedFields,
// kept by Transform, else its creation time.
func WrittenAt(o *csiv1.SecretProviderClassPodStatus) string {
	if w := o.Annotations[writtenAtKey]; w != "" {
		return w
	}
	t := o.CreationTimestamp.UTC().Format(time.RFC3339)
	for _, f := range o.ManagedFields {
		if f.Time != nil {
			if w := f.Time.UTC().Format(time.RFC3339); w > t {
				t = w
			}
		}
	}
	return t
}

// OfSecretProviderClassPodStatus returns the digests of the objects a
// SecretProviderClassPodStatus records as mounted: Keys maps each object ID
// to the SHA-256 of its version, and ReloaderSHA1 is Stakater Reloader's hash
// of the status (each "<id>=<version>" and "SecretProviderClassName=<name>",
// sorted, joined with ";", SHA-1).
func OfSecretProviderClassPodStatus(o *csiv1.SecretProviderClassPodStatus) Data {
	keys := make(map[string]string, len(o.Status.Objects))
	entries := make([]string, 0, len(o.Status.Objects)+1)
	for _, obj := range o.Status.Objects {
		keys[obj.ID] = Value([]byte(obj.Version))
		entries = append(entries, obj.ID+"="+obj.Version)
	}
	entries = append(entries, "SecretProviderClassName="+o.Status.SecretProviderClassName)
	return Data{Keys: keys, ReloaderSHA1: sha1OfEntries(entries)}
}

// Latest returns the SecretProviderClassPodStatus written last, by
// WrittenAt, then creation time, then name, so that the choice is the same
// on every call; nil for none. The CSI driver writes the versions it mounts
// into each pod's status, and pods started after a secret changed mount the
// new version, so the status written last holds the current versions.
func Latest(items []csiv1.SecretProviderClassPodStatus) *csiv1.SecretProviderClassPodStatus {
	if len(items) == 0 {
		return nil
	}
	sorted := make([]*csiv1.SecretProviderClassPodStatus, len(items))
	for i := range items {
		sorted[i] = &items[i]
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if wa, wb := WrittenAt(a), WrittenAt(b); wa != wb {
			return wa > wb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name > b.Name
	})
	return sorted[0]
}
