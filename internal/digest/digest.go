package digest

import (
	"crypto/sha1" //nolint:gosec // Reloader's hash; used for compatibility, not security.
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
)

// lastAppliedAnnotation is written by `kubectl apply` and holds a full copy
// of the object, data included; the cache must not keep it.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Data is what Reroll knows of one ConfigMap's or Secret's content.
type Data struct {
	// Keys maps each key of data and binaryData to the lowercase hex
	// SHA-256 of its value (64 characters).
	Keys map[string]string
	// ReloaderSHA1 is the lowercase hex SHA-1 that Stakater Reloader
	// computes over the whole object; see ReloaderSHA1OfConfigMap and
	// ReloaderSHA1OfSecret.
	ReloaderSHA1 string
}

// Of returns the digests of a ConfigMap or Secret: those an Object holds
// (see Transform), or, for a *corev1.ConfigMap or *corev1.Secret, computed
// from its values with the zero Key. It returns false for any other type.
func Of(obj any) (Data, bool) { return Key{}.Of(obj) }

// Of is Of with raw values digested under k (Key.Digest, bound to the
// object's namespace and name); an Object keeps the digests that Transform
// made.
func (k Key) Of(obj any) (Data, bool) {
	switch o := obj.(type) {
	case *Object:
		return o.Data(), true
	case *corev1.ConfigMap:
		keys := make(map[string]string, len(o.Data)+len(o.BinaryData))
		for name, v := range o.Data {
			keys[name] = k.Digest("ConfigMap", o.Namespace, o.Name, name, []byte(v))
		}
		for name, v := range o.BinaryData {
			keys[name] = k.Digest("ConfigMap", o.Namespace, o.Name, name, v)
		}
		return Data{Keys: keys, ReloaderSHA1: ReloaderSHA1OfConfigMap(o.Data, o.BinaryData)}, true
	case *corev1.Secret:
		keys := make(map[string]string, len(o.Data))
		for name, v := range o.Data {
			keys[name] = k.Digest("Secret", o.Namespace, o.Name, name, v)
		}
		return Data{Keys: keys, ReloaderSHA1: ReloaderSHA1OfSecret(o.Data)}, true
	}
	return Data{}, false
}

// Value returns the lowercase hex SHA-256 of one value (64 characters):
// the zero Key's Value.
func Value(v []byte) string { return Key{}.Value(v) }

// ReloaderSHA1OfConfigMap returns the hash that Stakater Reloader computes
// for a ConfigMap: the strings "key=value" for each data entry and
// "key=base64(value)" (standard encoding, with padding) for each binaryData
// entry, sorted, joined with ";", hashed with SHA-1, as lowercase hex.
func ReloaderSHA1OfConfigMap(data map[string]string, binaryData map[string][]byte) string {
	entries := make([]string, 0, len(data)+len(binaryData))
	for k, v := range data {
		entries = append(entries, k+"="+v)
	}
	for k, v := range binaryData {
		entries = append(entries, k+"="+base64.StdEncoding.EncodeToString(v))
	}
	return sha1OfEntries(entries)
}

// ReloaderSHA1OfSecret returns the hash that Stakater Reloader computes for a
// Secret: the strings "key=value" with the raw bytes as the value, sorted,
// joined with ";", hashed with SHA-1, as lowercase hex.
func ReloaderSHA1OfSecret(data map[string][]byte) string {
	entries := make([]string, 0, len(data))
	for k, v := range data {
		entries = append(entries, k+"="+string(v))
	}
	return sha1OfEntries(entries)
}

func sha1OfEntries(entries []string) string {
	sort.Strings(entries)
	sum := sha1.Sum([]byte(strings.Join(entries, ";"))) //nolint:gosec // see import
	return hex.EncodeToString(sum[:])
}

// Transform is a client-go cache transform (cache.TransformFunc). A
// *corev1.ConfigMap or *corev1.Secret becomes an *Object: metadata, one
// SHA-256 digest per key of data and binaryData (stringData is write-only and
// never read back) and the Reloader SHA-1, no value; a Secrets Store CSI
// Driver SecretProviderClassPodStatus keeps only the versions of its mounted
// objects and the time of its last write (see transformCSI); any other
// object loses managedFields and the kubectl last-applied-configuration
// annotation, which Reroll never reads and which would keep a copy of the
// data. It is idempotent, as client-go requires (it may apply a transform
// twice to the same object): an *Object passes through unchanged, and so does
// an object already stripped. Tombstones and non-objects pass through
// unchanged. It never returns an error.
func Transform(obj any) (any, error) { return Key{}.Transform(obj) }

// Transform is Transform with each value digested under k
// (Key.Digest: HMAC-SHA-256 bound to the object and key), so that the cache, and everything Reroll writes from it,
// holds only keyed digests.
func (k Key) Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *Object:
		return obj, nil
	case *csiv1.SecretProviderClassPodStatus:
		// Before managedFields go: they hold the time of the last write.
		transformCSI(o)
		return obj, nil
	case *corev1.ConfigMap:
		values := make(map[string][]byte, len(o.Data)+len(o.BinaryData))
		for name, v := range o.Data {
			values[name] = []byte(v)
		}
		for name, v := range o.BinaryData {
			values[name] = v
		}
		return newObject(o, "ConfigMap", values, ReloaderSHA1OfConfigMap(o.Data, o.BinaryData), k), nil
	case *corev1.Secret:
		return newObject(o, "Secret", o.Data, ReloaderSHA1OfSecret(o.Data), k), nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		delete(a, lastAppliedAnnotation)
	}
	return obj, nil
}

// PodReloaderEntry is one object in SAP pod-reloader's hash.
type PodReloaderEntry struct {
	// Kind is "configmap" or "secret".
	Kind string
	// Namespace and Name identify the object.
	Namespace, Name string
	// Exists is false for a listed object that does not exist; UID and
	// ResourceVersion are then ignored.
	Exists          bool
	UID             string
	ResourceVersion string
}

// PodReloaderHash returns SAP pod-reloader's config hash: for each entry in
// order (pod-reloader lists ConfigMaps, in annotation order, then Secrets),
// "<kind>/<namespace>/<name>/" followed by "<uid>.<resourceVersion>" when
// the object exists, and a newline; the lowercase hex SHA-256 of the whole.
// Any write to an object changes its resourceVersion, so any write changes
// the hash.
func PodReloaderHash(entries []PodReloaderEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Kind + "/" + e.Namespace + "/" + e.Name + "/")
		if e.Exists {
			b.WriteString(e.UID + "." + e.ResourceVersion)
		}
		b.WriteString("\n")
	}
	return Value([]byte(b.String()))
}

// WaveHash returns Wave's (wave.pusher.com) config hash: the lowercase hex
// SHA-256 of {"configMaps": {<name>: {<key>: <value>}}, "secrets": {...}}
// serialized by Go's encoding/json (map keys sorted, byte values in
// standard base64). Objects are keyed by name only; a nil map counts as
// empty.
func WaveHash(configMaps, secrets map[string]map[string][]byte) string {
	if configMaps == nil {
		configMaps = map[string]map[string][]byte{}
	}
	if secrets == nil {
		secrets = map[string]map[string][]byte{}
	}
	b, _ := json.Marshal(map[string]map[string]map[string][]byte{"configMaps": configMaps, "secrets": secrets}) // maps of bytes always encode
	return Value(b)
}
