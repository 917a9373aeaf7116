package revert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/envtrim"
)

// marshalSum is the fingerprint as computed before the pooled buffers:
// the first 8 bytes, in hex, of the SHA-256 of prefix and json.Marshal(v).
func marshalSum(prefix string, v any) string {
	b, _ := json.Marshal(v)
	h := sha256.New()
	h.Write([]byte(prefix))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// TestFingerprints_AsMarshal: Fingerprint, SumsOf and Trimmed, which
// encode through pooled buffers, give the fingerprints of json.Marshal's
// bytes (the records on workloads hold them, so they must never move), on
// templates with what JSON escapes (HTML characters, U+2028, invalid
// UTF-8), long env values and several containers, one after the other so
// that a buffer is reused after a longer encoding.
func TestFingerprints_AsMarshal(t *testing.T) {
	escapes := apiTemplate()
	escapes.Annotations = map[string]string{"html": "<a href=\"x\">&amp;</a>", "line": "a\u2028b\u2029c", "bad": "\xff\xfe", "ctl": "\x00\x1f\t"}
	long := apiTemplate()
	long.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "BIG", Value: strings.Repeat("x", envtrim.MaxValue+1)}, {Name: "SMALL", Value: "<1>"}}
	many := apiTemplate()
	for range 20 {
		c := many.Spec.Containers[0]
		c.Name += "x"
		many.Spec.Containers = append(many.Spec.Containers, c)
	}
	for name, tmpl := range map[string]*corev1.PodTemplateSpec{"from the API": apiTemplate(), "with escapes": escapes, "with a long env value": long,
		"with many containers": many, "empty": {}, "kept": envtrim.Keep(apiTemplate())} {
		t.Run(name, func(t *testing.T) {
			for range 2 {
				s := SumsOf(tmpl)
				full := tmpl
				if longEnvValue(&tmpl.Spec) {
					full = tmpl.DeepCopy()
					envtrim.Values(&full.Spec)
				}
				if want := marshalSum("", full); s.Full != want || Fingerprint(tmpl) != want {
					t.Errorf("Full = %s, Fingerprint = %s, want %s", s.Full, Fingerprint(tmpl), want)
				}
				rest := tmpl.DeepCopy()
				rest.Annotations = nil
				rest.Spec.Volumes, rest.Spec.ImagePullSecrets = nil, nil
				rest.Spec.InitContainers, rest.Spec.Containers = withoutKept(rest.Spec.InitContainers), withoutKept(rest.Spec.Containers)
				if want := marshalSum("", rest); s.Rest != want {
					t.Errorf("Rest = %s, want %s", s.Rest, want)
				}
				if got, want := s.Trimmed(tmpl), marshalSum(trimmedTag+s.Rest, envtrim.View(tmpl)); got != want {
					t.Errorf("Trimmed = %s, want %s", got, want)
				}
			}
		})
	}
}
