package projection

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// digestLength is the length in hex characters of the keyed digests Reroll
// writes: 128 bits.
const digestLength = 32

// sourceValue is the current value of one source, read from the API server
// for one reconcile and never kept.
type sourceValue struct {
	// value is the key's bytes (a ConfigMap's data as UTF-8).
	value []byte
	// present is false when an optional object or key is absent.
	present bool
}

// placeholder matches ${name} in a template, as Flux's post-build
// substitution writes it.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// MaxFieldBytes bounds the rendered value of one field, in bytes: 1 MiB,
// the most a ConfigMap or Secret can hold, so every source value fits as
// it is. A template repeats its sources (1,024 ${a} in 4,096 characters
// over a 1 MiB value would be 1 GiB), so the bound is checked on the size
// computed from the template and the values' lengths, before any byte of
// the value is built.
const MaxFieldBytes = 1 << 20

// MaxRenderedBytes bounds the rendered values of all of a Projection's
// fields together, in bytes: 1.5 MiB, etcd's default limit on one object,
// which no target can exceed anyway.
const MaxRenderedBytes = 3 << 19

// tooLarge is the error of a Projection whose rendered values would exceed
// MaxFieldBytes or MaxRenderedBytes.
type tooLarge struct{ msg string }

func (e *tooLarge) Error() string { return e.msg }

// renderedSize returns the length in bytes of the value render returns for
// f, computed from the template and the values' lengths without building
// it; 0 for a field that is not written (an absent optional source) or that
// render refuses. It allocates only the template's match indexes.
func renderedSize(f rerollv1alpha1.Field, values map[string]sourceValue) int64 {
	switch {
	case f.Source != "":
		v := values[f.Source]
		if f.Encoding == rerollv1alpha1.EncodingBase64 {
			return int64(base64.StdEncoding.EncodedLen(len(v.value)))
		}
		return int64(len(v.value))
	case f.Template != nil:
		t := *f.Template
		n := int64(len(t))
		for _, m := range placeholder.FindAllStringSubmatchIndex(t, -1) {
			n += int64(len(values[t[m[2]:m[3]]].value)) - int64(m[1]-m[0])
		}
		return n
	case len(f.DigestOf) > 0:
		return digestLength
	}
	return 0
}

// checkSizes returns a *tooLarge error naming the first field whose value
// would exceed MaxFieldBytes, or the total when all fields together would
// exceed MaxRenderedBytes. It runs before render allocates anything.
func checkSizes(fields []rerollv1alpha1.Field, values map[string]sourceValue) error {
	var total int64
	for _, f := range fields {
		n := renderedSize(f, values)
		if n > MaxFieldBytes {
			return &tooLarge{fmt.Sprintf("field %s: its value would be %d bytes, over the limit of %d bytes per field", f.Path, n, MaxFieldBytes)}
		}
		total += n
	}
	if total > MaxRenderedBytes {
		return &tooLarge{fmt.Sprintf("the fields' values would be %d bytes together, over the limit of %d bytes per Projection", total, MaxRenderedBytes)}
	}
	return nil
}

// render returns the value of field f from the sources' values, keyed by
// source name. ok is false when the field needs an optional source that is
// absent: the field is then not written. An error means the spec or a value
// cannot be written (a value that is not UTF-8 written as a String, a name
// with no source) and retrying cannot help.
func render(f rerollv1alpha1.Field, values map[string]sourceValue, key []byte) (value string, ok bool, err error) {
	switch {
	case f.Source != "":
		v, found := values[f.Source]
		if !found {
			return "", false, fmt.Errorf("field %s: no source named %q", f.Path, f.Source)
		}
		if !v.present {
			return "", false, nil
		}
		if f.Encoding == rerollv1alpha1.EncodingBase64 {
			return base64.StdEncoding.EncodeToString(v.value), true, nil
		}
		if !utf8.Valid(v.value) {
			return "", false, fmt.Errorf("field %s: the value of source %s is not UTF-8; use encoding Base64", f.Path, f.Source)
		}
		return string(v.value), true, nil
	case f.Template != nil:
		var errs []string
		absent := false
		out := placeholder.ReplaceAllStringFunc(*f.Template, func(m string) string {
			name := m[2 : len(m)-1]
			v, found := values[name]
			switch {
			case !found:
				errs = append(errs, name)
			case !v.present:
				absent = true
			case !utf8.Valid(v.value):
				errs = append(errs, name+" (not UTF-8)")
			}
			return string(v.value)
		})
		if len(errs) > 0 {
			return "", false, fmt.Errorf("field %s: the template uses sources that are missing or not text: %v", f.Path, errs)
		}
		if absent {
			return "", false, nil
		}
		return out, true, nil
	case len(f.DigestOf) > 0:
		for _, n := range f.DigestOf {
			if _, found := values[n]; !found {
				return "", false, fmt.Errorf("field %s: digestOf names no source %q", f.Path, n)
			}
		}
		return keyedDigest(key, values, f.DigestOf), true, nil
	}
	return "", false, fmt.Errorf("field %s: set one of source, template and digestOf", f.Path)
}

// placeKey returns the key of one Projection's digests: the HMAC-SHA-256
// under key of "reroll.dev/projection", the Projection's namespace and its
// name, each followed by a NUL byte. Two Projections that read the same
// values thus write unrelated digests, and a tenant who can read another
// namespace's targets cannot test guesses with a Projection of their own.
func placeKey(key []byte, namespace, name string) []byte {
	mac := hmac.New(sha256.New, key)
	for _, s := range []string{"reroll.dev/projection", namespace, name} {
		mac.Write([]byte(s))
		mac.Write([]byte{0})
	}
	return mac.Sum(nil)
}

// keyedDigest returns the HMAC-SHA-256 under key of the named sources'
// values (names sorted; each name, presence and length-prefixed value, so no
// two different inputs share an encoding), as digestLength hex characters.
// Without the key it reveals nothing about the values, not even whether two
// Projections read the same one.
func keyedDigest(key []byte, values map[string]sourceValue, names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	mac := hmac.New(sha256.New, key)
	var n [8]byte
	for _, name := range sorted {
		v := values[name]
		binary.BigEndian.PutUint64(n[:], uint64(len(name)))
		mac.Write(n[:])
		mac.Write([]byte(name))
		if !v.present {
			mac.Write([]byte{0})
			continue
		}
		mac.Write([]byte{1})
		binary.BigEndian.PutUint64(n[:], uint64(len(v.value)))
		mac.Write(n[:])
		mac.Write(v.value)
	}
	return hex.EncodeToString(mac.Sum(nil))[:digestLength]
}
