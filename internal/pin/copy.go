package pin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// Metadata of a copy. Labels are for people (kubectl get -l); Reroll reads
// the annotations, which its cache keeps.
const (
	// LabelCopyOf labels a copy with its source's name (SourceLabelValue).
	LabelCopyOf = "reroll.dev/copy-of"
	// AnnotationCopyOf holds the source's full name.
	AnnotationCopyOf = "reroll.dev/copy-of"
	// AnnotationSignature holds the copy's keyed signature (Signature): 32
	// lowercase hex characters.
	AnnotationSignature = "reroll.dev/copy-signature"
)

// DigestChars is the length of the keyed content digest in a copy's name:
// 10 hex characters (40 bits). A collision between two contents of one
// source in one namespace is found by Verify (the existing copy's
// signature does not match the content) and the copy is then not made.
const DigestChars = 10

// maxNameLength is the longest name of a ConfigMap or Secret (a DNS
// subdomain).
const maxNameLength = validation.DNS1123SubdomainMaxLength

// Derived-key purposes, each a key of its own (digest.Key.Derive).
const (
	namePurpose      = "pin/name"
	signaturePurpose = "pin/signature"
)

// signatureBytes is the length of a signature: 128 bits.
const signatureBytes = 16

// ErrNotPinnable marks a source that Reroll does not copy: a Secret whose
// type makes the API server or a controller own its content
// (kubernetes.io/service-account-token, bootstrap.kubernetes.io/token).
var ErrNotPinnable = errors.New("not pinnable")

// ErrNotACopy marks an object that is no copy made under the installation
// key: no copy annotations, or a signature that does not verify.
var ErrNotACopy = errors.New("not a copy made by reroll")

// Name returns the name of the copy of the source kind namespace/source
// whose keys have the keyed digests keys (digest.Data.Keys of the source,
// under k, bound to the source's place: what the informer cache holds and
// what k.Of computes from the object): the source's name, "-" and
// DigestChars hex characters of the HMAC-SHA-256, under k.Derive("pin/name"),
// of kind, namespace and source, each followed by a NUL byte, then each key
// in byte order followed by a NUL byte and its digest. A source name too
// long for the suffix is cut (and any trailing '.' or '-' dropped) so that
// the result is a DNS subdomain of at most 253 characters.
func Name(k digest.Key, kind reference.Kind, namespace, source string, keys map[string]string) string {
	m := hmac.New(sha256.New, k.Derive(namePurpose))
	for _, s := range []string{string(kind), namespace, source} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	writeKeys(m, keys)
	sum := hex.EncodeToString(m.Sum(nil))[:DigestChars]
	prefix := source
	if len(prefix) > maxNameLength-1-DigestChars {
		prefix = strings.TrimRight(prefix[:maxNameLength-1-DigestChars], ".-")
	}
	return prefix + "-" + sum
}

// writeKeys writes each key of keys, in byte order, followed by a NUL byte
// and its digest followed by a NUL byte (a key holds no NUL).
func writeKeys(w interface{ Write([]byte) (int, error) }, keys map[string]string) {
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		w.Write([]byte(key))
		w.Write([]byte{0})
		w.Write([]byte(keys[key]))
		w.Write([]byte{0})
	}
}

// Signature returns the signature of the copy kind namespace/name of
// source holding keys, the keyed digests of the copy's own keys
// (digest.Data.Keys of the copy under k, bound to the copy's place): the
// first 16 bytes, as lowercase hex, of the HMAC-SHA-256 under
// k.Derive("pin/signature") of kind, namespace, name and source, each
// followed by a NUL byte, then the keys as Name writes them.
func Signature(k digest.Key, kind reference.Kind, namespace, name, source string, keys map[string]string) string {
	m := hmac.New(sha256.New, k.Derive(signaturePurpose))
	for _, s := range []string{string(kind), namespace, name, source} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	writeKeys(m, keys)
	return hex.EncodeToString(m.Sum(nil)[:signatureBytes])
}

// SourceLabelValue returns the value of LabelCopyOf for source: the name
// itself when it is a valid label value (at most 63 characters), else its
// first 52 characters (trailing '.', '-' dropped), "-" and 10 hex characters
// of the SHA-256 of the whole name (a name is no secret).
func SourceLabelValue(source string) string {
	if len(validation.IsValidLabelValue(source)) == 0 {
		return source
	}
	sum := sha256.Sum256([]byte(source))
	return strings.TrimRight(source[:min(len(source), 52)], ".-_") + "-" + hex.EncodeToString(sum[:])[:10]
}

// Build returns the copy of src, a *corev1.ConfigMap or *corev1.Secret as
// read from the API (values, not a cached digest.Object): in src's
// namespace, named Name, of src's type (Secrets) with src's data and
// binaryData, immutable, with the copy labels and annotations, and without
// owners (see the package doc). It returns an error wrapping ErrNotPinnable
// for the Secret types in ErrNotPinnable and for any other type of src.
func Build(k digest.Key, src any) (client.Object, error) {
	yes := true
	switch s := src.(type) {
	case *corev1.ConfigMap:
		d, _ := k.Of(s)
		name := Name(k, reference.ConfigMap, s.Namespace, s.Name, d.Keys)
		c := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name},
			Immutable:  &yes,
			Data:       maps.Clone(s.Data),
			BinaryData: maps.Clone(s.BinaryData),
		}
		cd, _ := k.Of(c)
		c.Labels, c.Annotations = meta(k, reference.ConfigMap, s.Namespace, name, s.Name, cd.Keys)
		return c, nil
	case *corev1.Secret:
		if s.Type == corev1.SecretTypeServiceAccountToken || s.Type == corev1.SecretTypeBootstrapToken {
			return nil, fmt.Errorf("secret %s/%s of type %s: %w", s.Namespace, s.Name, s.Type, ErrNotPinnable)
		}
		d, _ := k.Of(s)
		name := Name(k, reference.Secret, s.Namespace, s.Name, d.Keys)
		c := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name},
			Immutable:  &yes,
			Type:       s.Type,
			Data:       maps.Clone(s.Data),
		}
		cd, _ := k.Of(c)
		c.Labels, c.Annotations = meta(k, reference.Secret, s.Namespace, name, s.Name, cd.Keys)
		return c, nil
	}
	return nil, fmt.Errorf("a %T: %w", src, ErrNotPinnable)
}

func meta(k digest.Key, kind reference.Kind, namespace, name, source string, keys map[string]string) (labels, annotations map[string]string) {
	return map[string]string{LabelCopyOf: SourceLabelValue(source)},
		map[string]string{
			AnnotationCopyOf:    source,
			AnnotationSignature: Signature(k, kind, namespace, name, source, keys),
		}
}

// IsCopy reports whether obj says it is a copy (it has AnnotationCopyOf).
// Anyone who may write the object may say so: only Verify proves it.
func IsCopy(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[AnnotationCopyOf]
	return ok
}

// Copy is what Verify proves of a copy.
type Copy struct {
	// Kind is the copy's and its source's kind.
	Kind reference.Kind
	// Namespace is the copy's and its source's namespace.
	Namespace string
	// Name is the copy's name.
	Name string
	// Source is the source's name.
	Source string
}

// Verify proves that obj is a copy made under k, or under a key that k
// replaced in a rotation (k.Older, bound schemes only), holding the data it
// was made with: obj is a *corev1.ConfigMap or *corev1.Secret read from the
// API, or a *digest.Object from the informer cache (whose digests Transform
// made under k, so that copies made under a previous key verify only from
// an API read); kind says which. It returns an error wrapping ErrNotACopy
// when the annotations are missing, the name is not the source's plus a
// digest, or the signature does not match the object's name, source and
// data; a typed object must also be immutable.
func Verify(k digest.Key, kind reference.Kind, obj metav1.Object) (Copy, error) {
	c := Copy{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Source: obj.GetAnnotations()[AnnotationCopyOf]}
	if !immutable(obj) {
		return c, fmt.Errorf("%s %s/%s is not immutable: %w", kind, c.Namespace, c.Name, ErrNotACopy)
	}
	return verify(k, c, obj.GetAnnotations(), func(key digest.Key) (map[string]string, bool) {
		d, ok := key.Of(obj)
		return d.Keys, ok
	})
}

// VerifyDigests is Verify for what a cache keeps of a ConfigMap or Secret:
// its kind, namespace, name and annotations and the keyed digests of its
// keys under k (digest.Data.Keys, bound to the object's place; a
// plan.Source's Object). It cannot tell whether the object is immutable.
func VerifyDigests(k digest.Key, kind reference.Kind, namespace, name string, annotations, keys map[string]string) (Copy, error) {
	c := Copy{Kind: kind, Namespace: namespace, Name: name, Source: annotations[AnnotationCopyOf]}
	return verify(k, c, annotations, func(key digest.Key) (map[string]string, bool) {
		// The digests were made under k: a copy signed under an older key
		// verifies only from an API read.
		return keys, key.ID() == k.ID()
	})
}

// verify checks c's annotations and signature against the digests of its
// keys under each key of k's that may have signed it.
func verify(k digest.Key, c Copy, annotations map[string]string, digests func(digest.Key) (map[string]string, bool)) (Copy, error) {
	source, sig := annotations[AnnotationCopyOf], annotations[AnnotationSignature]
	if source == "" || sig == "" {
		return c, fmt.Errorf("%s %s/%s has no copy annotations: %w", c.Kind, c.Namespace, c.Name, ErrNotACopy)
	}
	if !nameOf(c.Name, source) {
		return c, fmt.Errorf("%s %s/%s is not named for its source %q: %w", c.Kind, c.Namespace, c.Name, source, ErrNotACopy)
	}
	for _, key := range append([]digest.Key{k}, k.Older()...) {
		if key.IsLegacy() {
			continue
		}
		keys, ok := digests(key)
		if !ok {
			continue
		}
		if hmac.Equal([]byte(sig), []byte(Signature(key, c.Kind, c.Namespace, c.Name, source, keys))) {
			return c, nil
		}
	}
	return c, fmt.Errorf("%s %s/%s: the signature does not verify: %w", c.Kind, c.Namespace, c.Name, ErrNotACopy)
}

// nameOf reports whether name has the form Name gives a copy of source.
func nameOf(name, source string) bool {
	i := len(name) - DigestChars - 1
	if i < 1 || name[i] != '-' {
		return false
	}
	for _, r := range name[i+1:] {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	prefix := source
	if len(prefix) > maxNameLength-1-DigestChars {
		prefix = strings.TrimRight(prefix[:maxNameLength-1-DigestChars], ".-")
	}
	return name[:i] == prefix
}

// immutable reports whether a typed obj is immutable; a cached
// digest.Object cannot tell and passes (its data digests are signed).
func immutable(obj metav1.Object) bool {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *corev1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return true
}
