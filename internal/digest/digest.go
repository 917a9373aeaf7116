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

// digestedKey is the data key that marks a cached object whose values were
// replaced by digests; its value is the object's Reloader SHA-1. ConfigMap
// and Secret keys must match [-._a-zA-Z0-9]+, so no object read from the API
// server can carry it: only Transform sets it. It lives in the data map,
// which the object has anyway, rather than in an annotation: most
// ConfigMaps and Secrets have no annotations, and a map made only for the
// mark would cost about 400 bytes per object, a fifth of the cache.
const digestedKey = "reroll.dev:digested"

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

// Of returns the digests of a ConfigMap or Secret, reading them from an
// object that Transform already converted or computing them from the raw
// values with the zero Key otherwise. It returns false for any other type.
func Of(obj any) (Data, bool) { return Key{}.Of(obj) }

// Of is Of with the raw values digested under k; an object that a Transform
// converted keeps the digests that Transform made.
func (k Key) Of(obj any) (Data, bool) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if sha, ok := o.Data[digestedKey]; ok {
			// Never nil: a nil Keys means a missing object to callers.
			keys := make(map[string]string, len(o.Data)-1)
			for k, v := range o.Data {
				if k != digestedKey {
					keys[k] = v
				}
			}
			return Data{Keys: keys, ReloaderSHA1: sha}, true
		}
		keys := make(map[string]string, len(o.Data)+len(o.BinaryData))
		for name, v := range o.Data {
			keys[name] = k.Value([]byte(v))
		}
		for name, v := range o.BinaryData {
			keys[name] = k.Value(v)
		}
		return Data{Keys: keys, ReloaderSHA1: ReloaderSHA1OfConfigMap(o.Data, o.BinaryData)}, true
	case *corev1.Secret:
		keys := make(map[string]string, len(o.Data))
		if sha, ok := o.Data[digestedKey]; ok {
			for k, v := range o.Data {
				if k != digestedKey {
					keys[k] = string(v)
				}
			}
			return Data{Keys: keys, ReloaderSHA1: string(sha)}, true
		}
		for name, v := range o.Data {
			keys[name] = k.Value(v)
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

// Transform is a client-go cache transform (cache.TransformFunc). For a
// ConfigMap or Secret it replaces each value with its SHA-256 digest (binaryData
// moves into data, which the API guarantees shares no key with it) and
// records the Reloader SHA-1 under a data key no real object can have (read
// the result with Of, never from Data directly); a Secrets Store CSI Driver
// SecretProviderClassPodStatus keeps only the versions of its mounted objects
// and the time of its last write (see transformCSI); for every object it drops managedFields and the
// kubectl last-applied-configuration annotation, which Reroll never reads and
// which would keep a copy of the data. It is idempotent: client-go may apply
// it twice to the same object, and the second call changes nothing. Objects
// of other types, and tombstones, pass through unchanged. It never returns an
// error.
func Transform(obj any) (any, error) { return Key{}.Transform(obj) }

// Transform is Transform with each value digested under k
// (HMAC-SHA-256), so that the cache, and everything Reroll writes from it,
// holds only keyed digests.
func (k Key) Transform(obj any) (any, error) {
	if o, ok := obj.(*csiv1.SecretProviderClassPodStatus); ok {
		// Before managedFields go: they hold the time of the last write.
		transformCSI(o)
		return obj, nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		delete(a, lastAppliedAnnotation)
	}
	// The values are replaced in the maps the decoder made, so that the
	// only allocation per key is its digest: at start-up this runs once per
	// ConfigMap and Secret of the cluster.
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if _, done := o.Data[digestedKey]; done {
			return obj, nil
		}
		sha := ReloaderSHA1OfConfigMap(o.Data, o.BinaryData)
		if o.Data == nil {
			o.Data = make(map[string]string, len(o.BinaryData)+1)
		}
		for name, v := range o.Data {
			o.Data[name] = k.Value([]byte(v))
		}
		for name, v := range o.BinaryData {
			o.Data[name] = k.Value(v)
		}
		o.BinaryData = nil
		o.Data[digestedKey] = sha
	case *corev1.Secret:
		if _, done := o.Data[digestedKey]; done {
			return obj, nil
		}
		sha := ReloaderSHA1OfSecret(o.Data)
		if o.Data == nil {
			o.Data = make(map[string][]byte, 1)
		}
		h := k.hash()
		for name, v := range o.Data {
			h.Reset()
			h.Write(v)
			d := make([]byte, hex.EncodedLen(h.Size()))
			hex.Encode(d, h.Sum(nil))
			o.Data[name] = d
		}
		o.StringData = nil
		o.Data[digestedKey] = []byte(sha)
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
