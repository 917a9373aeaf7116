package revert

import (
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/reroll/reroll/internal/envtrim"
)

// oldSumsOf is SumsOf as it was before issue #36, two encodings with
// json.Marshal: Full, the Fingerprint of the template (long env values as
// their digests, on a copy), and Rest, of the template with what
// envtrim.Keep keeps cleared on a deep copy. Records and held Sums written
// by older Reroll versions hold these values, so SumsOf must give them.
func oldSumsOf(t *corev1.PodTemplateSpec) Sums {
	full := t.DeepCopy()
	envtrim.Values(&full.Spec)
	rest := t.DeepCopy()
	rest.Annotations = nil
	rest.Spec.Volumes, rest.Spec.ImagePullSecrets = nil, nil
	clear := func(cs []corev1.Container) []corev1.Container {
		if len(cs) == 0 {
			return nil
		}
		for i := range cs {
			cs[i].Env, cs[i].EnvFrom, cs[i].VolumeMounts = nil, nil, nil
		}
		return cs
	}
	rest.Spec.InitContainers, rest.Spec.Containers = clear(rest.Spec.InitContainers), clear(rest.Spec.Containers)
	for i := range rest.Spec.EphemeralContainers {
		c := &rest.Spec.EphemeralContainers[i]
		c.Env, c.EnvFrom, c.VolumeMounts = nil, nil, nil
	}
	return Sums{Full: marshalSum("", full), Rest: marshalSum("", rest)}
}

// emptyLists gives, on r's draw, each list of t that the rest's encoding
// treats apart (kept members, containers) its nil, empty or unchanged
// form, and some env values a length over envtrim.MaxValue: the fuzzer
// fills lists with at least one element and short strings.
func emptyLists(r *rand.Rand, t *corev1.PodTemplateSpec) {
	pick := func() int { return r.Intn(3) }
	switch pick() {
	case 0:
		t.Annotations = nil
	case 1:
		t.Annotations = map[string]string{}
	}
	switch pick() {
	case 0:
		t.Spec.Containers = nil
	case 1:
		t.Spec.Containers = []corev1.Container{}
	}
	switch pick() {
	case 0:
		t.Spec.InitContainers = nil
	case 1:
		t.Spec.InitContainers = []corev1.Container{}
	}
	switch pick() {
	case 0:
		t.Spec.EphemeralContainers = nil
	case 1:
		t.Spec.EphemeralContainers = []corev1.EphemeralContainer{}
	}
	switch pick() {
	case 0:
		t.Spec.Volumes = nil
	case 1:
		t.Spec.Volumes = []corev1.Volume{}
	}
	if pick() == 0 {
		t.Spec.ImagePullSecrets = []corev1.LocalObjectReference{}
	}
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			switch pick() {
			case 0:
				cs[i].Env = []corev1.EnvVar{}
			case 1:
				if len(cs[i].Env) > 0 {
					cs[i].Env[0].Value = strings.Repeat("v", envtrim.MaxValue+1+r.Intn(3))
				}
			}
			if pick() == 0 {
				cs[i].EnvFrom, cs[i].VolumeMounts = nil, []corev1.VolumeMount{}
			}
		}
	}
}

// Issue #36: SumsOf, which encodes a template once and cuts the rest out
// of its JSON, gives the Sums of the two encodings before it, on random
// templates (apimachinery's fuzzer, with lists empty, nil or full, long
// env values, and member names such as "env" as map keys and values).
func TestSumsOf_AsTwoEncodings(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(36), serializer.NewCodecFactory(runtime.NewScheme()))
	r := rand.New(rand.NewSource(36))
	seen := map[string]int{}
	for i := range 2000 {
		tmpl := &corev1.PodTemplateSpec{}
		f.Fill(tmpl)
		if i%2 == 0 {
			emptyLists(r, tmpl)
		}
		if i%7 == 0 {
			tmpl.Labels = map[string]string{"annotations": `{"env":[]}`, "env": `\"volumes\":`}
			tmpl.Annotations = map[string]string{"volumes": "x", `"`: `\`}
		}
		orig := tmpl.DeepCopy()
		// The cut, not SumsOf's second encoding, gives Rest.
		if b := encodeJSON(tmpl); true {
			_, ok := restOf(nil, b.Bytes())
			jsonBuffers.Put(b)
			if !ok {
				t.Fatalf("template %d: restOf refused its encoding", i)
			}
		}
		got, want := SumsOf(tmpl), oldSumsOf(tmpl)
		if got != want {
			t.Fatalf("template %d: SumsOf = %+v, want %+v", i, got, want)
		}
		// SumsOf's fallback, should restOf ever refuse, gives the same.
		if rt := restTemplate(tmpl); marshalSum("", &rt) != want.Rest {
			t.Fatalf("template %d: the fallback's Rest %s, want %s", i, marshalSum("", &rt), want.Rest)
		}
		if got.Full != Fingerprint(tmpl) {
			t.Fatalf("template %d: Full %s is not the Fingerprint %s", i, got.Full, Fingerprint(tmpl))
		}
		if !equalTemplates(orig, tmpl) {
			t.Fatalf("template %d: SumsOf changed the template", i)
		}
		switch {
		case tmpl.Spec.Containers != nil && len(tmpl.Spec.Containers) == 0:
			seen["empty containers"]++
		case len(tmpl.Spec.Containers) > 0 && len(tmpl.Spec.Containers[0].Env) > 0:
			seen["a container with env"]++
		}
		if longEnvValue(&tmpl.Spec) {
			seen["a long env value"]++
		}
		if len(tmpl.Spec.EphemeralContainers) > 0 {
			seen["ephemeral containers"]++
		}
		if len(tmpl.Annotations) > 0 {
			seen["annotations"]++
		}
	}
	// Positive controls: the draws reached each shape.
	for _, shape := range []string{"empty containers", "a container with env", "a long env value", "ephemeral containers", "annotations"} {
		if seen[shape] == 0 {
			t.Errorf("no random template had %s", shape)
		}
	}
}

// equalTemplates compares two templates by their JSON encoding.
func equalTemplates(a, b *corev1.PodTemplateSpec) bool {
	return marshalSum("", a) == marshalSum("", b)
}

// TestRestOf_Cuts pins restOf's bytes on hand-written JSON: each member
// of what envtrim.Keep keeps cut wherever it stands among its siblings,
// an empty containers list as null, and input that is not an encoded
// template refused (SumsOf then encodes the rest itself).
func TestRestOf_Cuts(t *testing.T) {
	cases := map[string]struct {
		in   string // an encoded template
		want string // its rest
		ok   bool   // restOf reads it
	}{
		"nothing to cut":      {in: `{"metadata":{"name":"a"},"spec":{"containers":null}}`, want: `{"metadata":{"name":"a"},"spec":{"containers":null}}`, ok: true},
		"annotations first":   {in: `{"metadata":{"annotations":{"a":"}"},"labels":{"b":"c"}},"spec":{}}`, want: `{"metadata":{"labels":{"b":"c"}},"spec":{}}`, ok: true},
		"annotations last":    {in: `{"metadata":{"labels":{"b":"c"},"annotations":{"a":"1"}},"spec":{}}`, want: `{"metadata":{"labels":{"b":"c"}},"spec":{}}`, ok: true},
		"annotations alone":   {in: `{"metadata":{"annotations":{"a":"1"}},"spec":{}}`, want: `{"metadata":{},"spec":{}}`, ok: true},
		"annotation as label": {in: `{"metadata":{"labels":{"annotations":"x"}},"spec":{}}`, want: `{"metadata":{"labels":{"annotations":"x"}},"spec":{}}`, ok: true},
		"spec lists": {in: `{"metadata":{},"spec":{"volumes":[{"name":"v"}],"containers":[],"imagePullSecrets":[{"name":"p"}],"dnsPolicy":"x"}}`,
			want: `{"metadata":{},"spec":{"containers":null,"dnsPolicy":"x"}}`, ok: true},
		"container members": {in: `{"spec":{"initContainers":[{"name":"i","env":[{"name":"E","value":"\"]}"}],"image":"x"}],"containers":[{"envFrom":[{}],"name":"c","volumeMounts":[]},{"name":"d"}],"ephemeralContainers":[{"name":"e","env":[]}]}}`,
			want: `{"spec":{"initContainers":[{"name":"i","image":"x"}],"containers":[{"name":"c"},{"name":"d"}],"ephemeralContainers":[{"name":"e"}]}}`, ok: true},
		"empty init list kept":    {in: `{"spec":{"initContainers":[]}}`, want: `{"spec":{"initContainers":[]}}`, ok: true},
		"env outside a container": {in: `{"spec":{"env":[1],"nodeSelector":{"env":"x"}}}`, want: `{"spec":{"env":[1],"nodeSelector":{"env":"x"}}}`, ok: true},
		"not an object":           {in: `[1]`},
		"cut short":               {in: `{"metadata":{"annotations":{"a":"1"}`},
		"trailing bytes":          {in: `{"spec":{}}x`},
		"containers not a list":   {in: `{"spec":{"containers":{"a":1}}}`},
		"a member without value":  {in: `{"spec":{"dnsPolicy":}}`},
		"unterminated string":     {in: `{"spec":{"dnsPolicy":"x}}`},
		"empty":                   {in: ``},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := restOf(nil, []byte(c.in))
			if ok != c.ok {
				t.Fatalf("restOf(%s) ok = %v, want %v", c.in, ok, c.ok)
			}
			if ok && string(got) != c.want {
				t.Errorf("restOf(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}
