package digest

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The expected hashes below were computed outside Go, with
// `printf '%s' '<joined entries>' | sha1sum`, so they pin Reloader's
// algorithm rather than this package's reading of it.
func TestReloaderSHA1(t *testing.T) {
	cases := map[string]struct {
		// data and binaryData are a ConfigMap's; secret is a Secret's data.
		// Exactly one of the two kinds is set per case.
		data       map[string]string
		binaryData map[string][]byte
		secret     map[string][]byte
		// want is the lowercase hex SHA-1.
		want string
	}{
		"configmap entries are sorted by their key=value string": {
			data: map[string]string{"b": "2", "a": "1"},
			want: "f83e99e324ba68ccc373a58ef1eb42f8ab88646a", // "a=1;b=2"
		},
		"configmap binaryData is base64 with padding": {
			data:       map[string]string{"x": "y"},
			binaryData: map[string][]byte{"bin": {0xff, 0x00}},
			want:       "f7557653d3b9ee20a5797dce94a452b9f10352f5", // "bin=/wA=;x=y"
		},
		"configmap values keep newlines and UTF-8": {
			data: map[string]string{"z": "é", "k": "line1\nline2"},
			want: "d13984350377444a79dac4f53a69e44da04f7de5", // "k=line1\nline2;z=é"
		},
		"empty configmap hashes the empty string": {
			want: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		},
		"secret values are the raw bytes": {
			secret: map[string][]byte{"user": []byte("admin"), "password": []byte("s3cr3t")},
			want:   "e013dcfd8b3a9e80e812740978788202e1ef1325", // "password=s3cr3t;user=admin"
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			if tc.secret != nil {
				g.Expect(ReloaderSHA1OfSecret(tc.secret)).To(gomega.Equal(tc.want))
				d, _ := Of(&corev1.Secret{Data: tc.secret})
				g.Expect(d.ReloaderSHA1).To(gomega.Equal(tc.want))
				return
			}
			g.Expect(ReloaderSHA1OfConfigMap(tc.data, tc.binaryData)).To(gomega.Equal(tc.want))
			d, _ := Of(&corev1.ConfigMap{Data: tc.data, BinaryData: tc.binaryData})
			g.Expect(d.ReloaderSHA1).To(gomega.Equal(tc.want))
		})
	}
}

func TestTransform_ReplacesValuesWithDigests(t *testing.T) {
	g := gomega.NewWithT(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:          "cfg",
			Labels:        map[string]string{"app": "x"},
			Annotations:   map[string]string{lastAppliedAnnotation: `{"data":{"greeting":"hello"}}`, "keep": "me"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Data:       map[string]string{"greeting": "hello"},
		BinaryData: map[string][]byte{"bin": {0xff, 0x00}},
	}
	out, err := Transform(cm)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	got := out.(*Object)
	wantKeys := map[string]string{
		// printf 'hello' | sha256sum
		"greeting": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
		// printf '\xff\x00' | sha256sum
		"bin": "ea5dbf9596d187e9500f23e9a680109475341cf4e81f7e043f7d97152c10772f",
	}
	g.Expect(got.GetName()).To(gomega.Equal("cfg"))
	g.Expect(got.packed).NotTo(gomega.ContainSubstring("hello"))
	g.Expect(got.GetManagedFields()).To(gomega.BeNil())
	g.Expect(got.GetAnnotations()).To(gomega.Equal(map[string]string{"keep": "me"}))
	// Labels are not kept: Reroll reads none of a ConfigMap's or Secret's.
	g.Expect(got.GetLabels()).To(gomega.BeNil())

	d, ok := Of(got)
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(d.ReloaderSHA1).To(gomega.Equal(ReloaderSHA1OfConfigMap(map[string]string{"greeting": "hello"}, map[string][]byte{"bin": {0xff, 0x00}})))
	g.Expect(d.Keys).To(gomega.Equal(wantKeys))
}

func TestTransform_IsIdempotent(t *testing.T) {
	objects := map[string]func() any{
		"configmap": func() any {
			return &corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}}
		},
		"secret": func() any {
			return &corev1.Secret{Data: map[string][]byte{"password": []byte("s3cr3t")}}
		},
	}
	for name, mk := range objects {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			once, _ := Transform(mk())
			want, _ := Of(once)
			twice, _ := Transform(once)
			got, _ := Of(twice)
			g.Expect(got).To(gomega.Equal(want))
			// The digests of the raw object and of its transformed form agree,
			// so a cache that holds either compares equal.
			raw, _ := Of(mk())
			g.Expect(got).To(gomega.Equal(raw))
		})
	}
}

func TestTransform_SecretHoldsNoValue(t *testing.T) {
	g := gomega.NewWithT(t)
	out, _ := Transform(&corev1.Secret{Data: map[string][]byte{"password": []byte("s3cr3t")}, StringData: map[string]string{"x": "y"}})
	s := out.(*Object)
	g.Expect(s.Data().Keys).To(gomega.Equal(map[string]string{"password": Value([]byte("s3cr3t"))}))
	g.Expect(s.packed).NotTo(gomega.ContainSubstring("s3cr3t"))
	// Nothing else of the Secret is kept in a form that holds the value.
	g.Expect(fmt.Sprintf("%#v", s)).NotTo(gomega.ContainSubstring("s3cr3t"))
}

func TestTransform_PassesOtherTypesThrough(t *testing.T) {
	g := gomega.NewWithT(t)
	in := "not an object"
	out, err := Transform(in)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(out).To(gomega.Equal(in))
	_, ok := Of(in)
	g.Expect(ok).To(gomega.BeFalse())
}

// The expected hashes were computed outside Go:
// printf 'configmap/ns/a/1111.5\nconfigmap/ns/missing/\nsecret/ns/s/2222.7\n' | sha256sum
func TestPodReloaderHash(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(PodReloaderHash([]PodReloaderEntry{
		{Kind: "configmap", Namespace: "ns", Name: "a", Exists: true, UID: "1111", ResourceVersion: "5"},
		{Kind: "configmap", Namespace: "ns", Name: "missing", UID: "ignored"},
		{Kind: "secret", Namespace: "ns", Name: "s", Exists: true, UID: "2222", ResourceVersion: "7"},
	})).To(gomega.Equal("965af9c657566dedebeb67cc58192adc0d03e419f0ff428dbcd17b364489a436"))
	g.Expect(PodReloaderHash(nil)).To(gomega.Equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
}

// The expected hashes were computed outside Go, with Python's
// json.dumps(doc, sort_keys=True, separators=(',', ':')) and hashlib.sha256.
func TestWaveHash(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(WaveHash(
		map[string]map[string][]byte{"cfg": {"a": []byte("1")}, "empty": {}},
		map[string]map[string][]byte{"db": {"password": []byte("s3cr3t")}},
	)).To(gomega.Equal("0d6904aa9f39194695f07bc79a4a609153d33b4c5c4ce45d9ebb1745a463c8ad"))
	g.Expect(WaveHash(nil, nil)).To(gomega.Equal("100444e91862dd77d7ebe29f050c1e9a7f357c771e1a7b7650aae27e6a3a031d"))
}

func TestTransform_EmptyObjectsStillHaveKeys(t *testing.T) {
	// Of returns nil Keys only for no object at all; an existing object
	// without data must not look missing once transformed.
	for name, obj := range map[string]any{
		"configmap": &corev1.ConfigMap{},
		"secret":    &corev1.Secret{},
	} {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			out, _ := Transform(obj)
			d, ok := Of(out)
			g.Expect(ok).To(gomega.BeTrue())
			g.Expect(d.Keys).NotTo(gomega.BeNil())
			g.Expect(d.Keys).To(gomega.BeEmpty())
		})
	}
}

// FuzzTransform checks the cache transform: applying it twice changes
// nothing (client-go may call it twice), and Of reads the same digests from
// the converted object as from the raw one.
func FuzzTransform(f *testing.F) {
	f.Add("k", []byte("v"), "bin", []byte{0xff, 0x00})
	f.Add("", []byte(nil), "x", []byte(""))
	f.Add("reroll.dev:digested", []byte("forged"), "a", []byte("b"))
	f.Add(strings.Repeat("k", 200), []byte("long key"), "b", []byte("c"))
	f.Fuzz(func(t *testing.T, key string, value []byte, binKey string, binValue []byte) {
		cm := &corev1.ConfigMap{Data: map[string]string{key: string(value)}}
		if binKey != key {
			cm.BinaryData = map[string][]byte{binKey: binValue}
		}
		s := &corev1.Secret{Data: map[string][]byte{key: value, binKey: binValue}}
		for _, obj := range []interface {
			DeepCopyObject() runtime.Object
		}{cm, s} {
			raw, _ := Of(obj)
			once, _ := Transform(obj.DeepCopyObject())
			fromOnce, _ := Of(once)
			twice, _ := Transform(once.(runtime.Object).DeepCopyObject())
			if !reflect.DeepEqual(once, twice) {
				t.Fatalf("second transform changed %#v to %#v", once, twice)
			}
			if !equality.Semantic.DeepEqual(raw, fromOnce) {
				t.Fatalf("Of after Transform = %#v, want %#v", fromOnce, raw)
			}
		}
	})
}

func TestKey_DeriveSeparatesUsesAndKeys(t *testing.T) {
	a, err := NewKey(bytes.Repeat([]byte("a"), MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKey(bytes.Repeat([]byte("b"), MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(a.Derive("projection")); got != 32 {
		t.Errorf("derived key has %d bytes, want 32", got)
	}
	if string(a.Derive("projection")) != string(a.Derive("projection")) {
		t.Error("the same key and purpose derive different keys")
	}
	if string(a.Derive("projection")) == string(b.Derive("projection")) {
		t.Error("two installation keys derive the same key")
	}
	if string(a.Derive("projection")) == string(a.Derive("other")) {
		t.Error("two purposes derive the same key")
	}
}

func TestObject_DeepCopyDoesNotShareAnnotations(t *testing.T) {
	g := gomega.NewWithT(t)
	out, _ := Transform(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u", ResourceVersion: "7",
		Annotations: map[string]string{"reloader.stakater.com/match": "true"}}, Data: map[string][]byte{"a": []byte("1")}})
	o := out.(*Object)
	c := o.DeepCopyObject().(*Object)
	g.Expect(c).To(gomega.Equal(o))
	c.GetAnnotations()["reloader.stakater.com/match"] = "false"
	g.Expect(o.GetAnnotations()).To(gomega.HaveKeyWithValue("reloader.stakater.com/match", "true"))
	g.Expect([]string{o.GetNamespace(), o.GetName(), string(o.GetUID()), o.GetResourceVersion()}).To(gomega.Equal([]string{"ns", "s", "u", "7"}))
	g.Expect(o.String()).To(gomega.Equal("ns/s"))
	g.Expect(o.MarshalLog()).To(gomega.Equal(struct{ Namespace, Name string }{"ns", "s"}))
	want := o.Data()
	o.SetResourceVersion("8")
	o.SetUID("v")
	g.Expect([]string{string(o.GetUID()), o.GetResourceVersion()}).To(gomega.Equal([]string{"v", "8"}))
	g.Expect(o.Data()).To(gomega.Equal(want))
}

func TestUnpack_RefusesTruncatedDigests(t *testing.T) {
	g := gomega.NewWithT(t)
	out, _ := Transform(&corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}})
	p := out.(*Object).packed
	d, err := unpack(p)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(d.Keys).To(gomega.HaveLen(2))
	for _, cut := range []int{0, 1, 3, len(p) - sha1Size - 2*digestSize - 3, len(p) - 1} {
		_, err := unpack(p[:cut])
		g.Expect(err).To(gomega.MatchError(errPacked), "cut at %d", cut)
	}
}

// TestObject_DataHoldsEveryKeysDigest checks Data against Key.Digest of
// each value, over objects of 0, 1 and 40 keys (names of one to 40 bytes),
// keyed as the controller keys them.
func TestObject_DataHoldsEveryKeysDigest(t *testing.T) {
	k, err := NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 40} {
		g := gomega.NewWithT(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: "u", ResourceVersion: "9"},
			Data: map[string]string{}}
		want := map[string]string{}
		for i := range n {
			name := strings.Repeat(string(rune('a'+i%26)), i+1)
			cm.Data[name] = fmt.Sprintf("value %d", i)
			want[name] = k.Digest("ConfigMap", "ns", "cfg", name, []byte(cm.Data[name]))
		}
		out, err := k.Transform(cm.DeepCopy())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		d := out.(*Object).Data()
		g.Expect(d.Keys).To(gomega.Equal(want), "%d keys", n)
		g.Expect(d.ReloaderSHA1).To(gomega.Equal(ReloaderSHA1OfConfigMap(cm.Data, nil)), "%d keys", n)
	}
}

// BenchmarkObjectData unpacks the digests of a ConfigMap of 3 keys (the
// fan-out bench's) and of 30, as each reconcile that reads it does.
func BenchmarkObjectData(b *testing.B) {
	for _, n := range []int{3, 30} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: "u", ResourceVersion: "9"},
				Data: map[string]string{}}
			for i := range n {
				cm.Data[fmt.Sprintf("key-%d.yaml", i)] = fmt.Sprintf("value %d", i)
			}
			out, err := Transform(cm)
			if err != nil {
				b.Fatal(err)
			}
			o := out.(*Object)
			b.ReportAllocs()
			for b.Loop() {
				if len(o.Data().Keys) != n {
					b.Fatal("keys lost")
				}
			}
		})
	}
}
