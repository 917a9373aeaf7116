package pin

import (
	"errors"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
)

// testKey is an installation key as Reroll ships with: 32 bytes.
func testKey(t *testing.T, secret string) digest.Key {
	t.Helper()
	k, err := digest.NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	keyA = "0123456789abcdef0123456789abcdef"
	keyB = "fedcba9876543210fedcba9876543210"
)

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// The expected name was computed outside Go, with Python's hmac and
// hashlib: HKDF-SHA-256 of the key (salt "reroll.dev/derive/v2", info
// "pin/name"), then the HMAC-SHA-256 under it of "ConfigMap\0shop\0app-config\0"
// and, per key in order, the key, NUL, its digest.Key.Digest, NUL.
func TestName_IsTheKeyedDigestOfTheSourcesKeys(t *testing.T) {
	g := gomega.NewWithT(t)
	k := testKey(t, keyA)
	d, _ := k.Of(configMap("shop", "app-config", map[string]string{"app.yaml": "color: blue\n", "mode": "fast"}))
	g.Expect(Name(k, reference.ConfigMap, "shop", "app-config", d.Keys)).To(gomega.Equal("app-config-0e8b41b652"))
}

func TestName_DiffersWithEverythingItIsBoundTo(t *testing.T) {
	k := testKey(t, keyA)
	keys := func(ns, name string, data map[string]string) map[string]string {
		d, _ := k.Of(configMap(ns, name, data))
		return d.Keys
	}
	base := Name(k, reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"a": "1"}))
	cases := map[string]string{
		// another value of the same key
		"another value": Name(k, reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"a": "2"})),
		// the same value under another key name
		"another key": Name(k, reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"b": "1"})),
		// one more key
		"an added key": Name(k, reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"a": "1", "b": ""})),
		// the same content in another namespace
		"another namespace": Name(k, reference.ConfigMap, "bank", "app", keys("bank", "app", map[string]string{"a": "1"})),
		// the same content in a Secret of the same name
		"another kind": Name(k, reference.Secret, "shop", "app", keys("shop", "app", map[string]string{"a": "1"})),
		// another installation
		"another key of the installation": Name(testKey(t, keyB), reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"a": "1"})),
	}
	for name, got := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			g.Expect(got).To(gomega.HavePrefix("app-"))
			g.Expect(got).NotTo(gomega.Equal(base))
		})
	}
	// Positive control: the same input gives the same name.
	if again := Name(k, reference.ConfigMap, "shop", "app", keys("shop", "app", map[string]string{"a": "1"})); again != base {
		t.Fatalf("Name is not deterministic: %s then %s", base, again)
	}
}

func TestName_IsAValidNameOfAtMost253Characters(t *testing.T) {
	k := testKey(t, keyA)
	cases := map[string]struct {
		// source is the source's name.
		source string
		// prefix is what the copy's name starts with, before "-" and the digest.
		prefix string
	}{
		"a short name is kept": {source: "app-config", prefix: "app-config"},
		"a name of 253 characters is cut": {
			source: strings.Repeat("a", 253),
			prefix: strings.Repeat("a", 242),
		},
		"a cut that ends in a dot or dash drops it": {
			source: strings.Repeat("a", 240) + ".-b" + strings.Repeat("c", 10),
			prefix: strings.Repeat("a", 240),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			n := Name(k, reference.ConfigMap, "ns", tc.source, map[string]string{"k": "v"})
			g.Expect(validation.IsDNS1123Subdomain(n)).To(gomega.BeEmpty())
			g.Expect(len(n)).To(gomega.BeNumerically("<=", 253))
			g.Expect(n).To(gomega.MatchRegexp("^" + tc.prefix + "-[0-9a-f]{10}$"))
			g.Expect(nameOf(n, tc.source)).To(gomega.BeTrue())
		})
	}
}

func TestSourceLabelValue_IsAValidLabelValue(t *testing.T) {
	cases := map[string]struct {
		// source is the source's name; want the label value, "" for a
		// hashed form checked by pattern.
		source, want string
	}{
		"a short name is itself":       {source: "app-config", want: "app-config"},
		"63 characters are kept":       {source: strings.Repeat("a", 63), want: strings.Repeat("a", 63)},
		"a longer name is cut, hashed": {source: strings.Repeat("a", 51) + "." + strings.Repeat("b", 30)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got := SourceLabelValue(tc.source)
			g.Expect(validation.IsValidLabelValue(got)).To(gomega.BeEmpty())
			if tc.want != "" {
				g.Expect(got).To(gomega.Equal(tc.want))
				return
			}
			g.Expect(got).To(gomega.MatchRegexp("^a{51}-[0-9a-f]{10}$"))
		})
	}
}

func TestBuild_CopiesEveryKeyAndTheType(t *testing.T) {
	g := gomega.NewWithT(t)
	k := testKey(t, keyA)

	src := configMap("shop", "app-config", map[string]string{"app.yaml": "color: blue\n"})
	src.BinaryData = map[string][]byte{"logo": {0xff, 0x00}}
	src.Labels = map[string]string{"team": "web"}
	obj, err := Build(k, src)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	c := obj.(*corev1.ConfigMap)
	d, _ := k.Of(src)
	g.Expect(c.Name).To(gomega.Equal(Name(k, reference.ConfigMap, "shop", "app-config", d.Keys)))
	g.Expect(c.Namespace).To(gomega.Equal("shop"))
	g.Expect(c.Data).To(gomega.Equal(src.Data))
	g.Expect(c.BinaryData).To(gomega.Equal(src.BinaryData))
	g.Expect(*c.Immutable).To(gomega.BeTrue())
	g.Expect(c.Labels).To(gomega.Equal(map[string]string{LabelCopyOf: "app-config"}))
	g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(AnnotationCopyOf, "app-config"))
	g.Expect(c.Annotations[AnnotationSignature]).To(gomega.MatchRegexp("^[0-9a-f]{32}$"))
	g.Expect(c.OwnerReferences).To(gomega.BeEmpty())

	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("hunter2")},
	}
	obj, err = Build(k, sec)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	s := obj.(*corev1.Secret)
	g.Expect(s.Type).To(gomega.Equal(corev1.SecretTypeTLS))
	g.Expect(s.Data).To(gomega.Equal(sec.Data))
	g.Expect(*s.Immutable).To(gomega.BeTrue())
	// No value appears in the copy's metadata.
	for _, v := range []string{s.Name, s.Labels[LabelCopyOf], s.Annotations[AnnotationCopyOf], s.Annotations[AnnotationSignature]} {
		g.Expect(v).NotTo(gomega.ContainSubstring("hunter2"))
	}
}

func TestBuild_RefusesSecretsOthersOwn(t *testing.T) {
	k := testKey(t, keyA)
	for _, typ := range []corev1.SecretType{corev1.SecretTypeServiceAccountToken, corev1.SecretTypeBootstrapToken} {
		t.Run(string(typ), func(t *testing.T) {
			g := gomega.NewWithT(t)
			// Positive control: the same Secret as Opaque is copied.
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"token": []byte("x")}}
			_, err := Build(k, s)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			s.Type = typ
			_, err = Build(k, s)
			g.Expect(errors.Is(err, ErrNotPinnable)).To(gomega.BeTrue(), "%v", err)
		})
	}
}

func TestVerify(t *testing.T) {
	k := testKey(t, keyA)
	build := func(t *testing.T) *corev1.ConfigMap {
		obj, err := Build(k, configMap("shop", "app-config", map[string]string{"a": "1"}))
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*corev1.ConfigMap)
	}
	cases := map[string]struct {
		// key verifies; the copy was built under keyA.
		key digest.Key
		// change edits the built copy (nil: none).
		change func(c *corev1.ConfigMap)
		// cached verifies the informer cache's digest.Object of the copy.
		cached bool
		// ok is whether it verifies.
		ok bool
	}{
		"a copy as built verifies":                     {key: k, ok: true},
		"a copy from the informer cache verifies":      {key: k, cached: true, ok: true},
		"after a key rotation, the old copy verifies":  {key: rotated(t, keyB, keyA), ok: true},
		"a copy made by another installation does not": {key: testKey(t, keyB)},
		"a look-alike without a signature does not": {key: k, change: func(c *corev1.ConfigMap) {
			delete(c.Annotations, AnnotationSignature)
		}},
		"a look-alike with the copy's signature and other data does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Data["a"] = "2"
		}},
		"the same, read from the cache, does not": {key: k, cached: true, change: func(c *corev1.ConfigMap) {
			c.Data["a"] = "2"
		}},
		"a look-alike with an added key does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Data["b"] = ""
		}},
		"the copy under another name does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Name = "app-config-0000000000"
		}},
		"the copy in another namespace does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Namespace = "bank"
		}},
		"the copy claiming another source does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Annotations[AnnotationCopyOf] = "app"
		}},
		"a mutable look-alike does not": {key: k, change: func(c *corev1.ConfigMap) {
			c.Immutable = nil
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			c := build(t)
			g.Expect(IsCopy(c)).To(gomega.BeTrue())
			if tc.change != nil {
				tc.change(c)
			}
			var obj metav1.Object = c
			if tc.cached {
				o, err := k.Transform(c)
				g.Expect(err).NotTo(gomega.HaveOccurred())
				obj = o.(*digest.Object)
			}
			got, err := Verify(tc.key, reference.ConfigMap, obj)
			if !tc.ok {
				g.Expect(errors.Is(err, ErrNotACopy)).To(gomega.BeTrue(), "%v", err)
				return
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(got).To(gomega.Equal(Copy{Kind: reference.ConfigMap, Namespace: "shop", Name: c.Name, Source: "app-config"}))
		})
	}
}

// rotated is the key current, replacing previous.
func rotated(t *testing.T, current, previous string) digest.Key {
	t.Helper()
	k, err := testKey(t, current).WithPrevious([]byte(previous))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIsCopy_ReadsTheAnnotation(t *testing.T) {
	g := gomega.NewWithT(t)
	c := configMap("ns", "a", nil)
	g.Expect(IsCopy(c)).To(gomega.BeFalse())
	c.Annotations = map[string]string{AnnotationCopyOf: "b"}
	g.Expect(IsCopy(c)).To(gomega.BeTrue())
}
