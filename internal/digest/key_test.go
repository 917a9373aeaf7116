package digest

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKey(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, MinKeyBytes)
	other := bytes.Repeat([]byte{8}, MinKeyBytes)
	cases := map[string]struct {
		// secret is the key's bytes; nil for the zero Key.
		secret []byte
		// want is the digest of "correct-horse" bound to no place (Value),
		// computed outside Go: `printf correct-horse | sha256sum` for the
		// zero Key, and
		// `printf correct-horse | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '07%.0s' $(seq 32))`
		// (08 for the other key) for the keyed ones.
		want string
		// wantID is the key id, computed outside Go:
		// `printf 'reroll.dev key id, digests bound to their place' | openssl dgst -sha256 -mac HMAC -macopt hexkey:...`,
		// its first 8 hex characters; "" for the zero Key.
		wantID string
	}{
		"zero key is plain SHA-256": {
			want: "9dca666eb54730714630d1519264a7bf1eeaad00b8f2edc90d3ecbfad928d163",
		},
		"keyed is HMAC-SHA-256 under the key": {
			secret: secret,
			want:   "dc86a23fc9d659c79dc0aea48a130cef8a7db5a0b0e9079ec1c2699df8360a3b",
			wantID: "2c76e7f2",
		},
		"another key digests differently": {
			secret: other,
			want:   "ec5bd484cf884856a73f0abe0e92197dff7f0a0c333fa6afe41ecc77e1e6d89e",
			wantID: "0f74ee0d",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			k := Key{}
			if tc.secret != nil {
				var err error
				k, err = NewKey(tc.secret)
				g.Expect(err).NotTo(gomega.HaveOccurred())
			}
			g.Expect(k.ID()).To(gomega.Equal(tc.wantID))
			d := k.Value([]byte("correct-horse"))
			g.Expect(d).To(gomega.Equal(tc.want))
			// Transform and Of agree with Digest under the same key.
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"password": []byte("correct-horse")}}
			want := k.Digest("Secret", "ns", "db", "password", []byte("correct-horse"))
			raw, _ := k.Of(s.DeepCopy())
			conv, _ := k.Transform(s)
			fromCache, _ := k.Of(conv)
			g.Expect(raw.Keys["password"]).To(gomega.Equal(want))
			g.Expect(fromCache.Keys["password"]).To(gomega.Equal(want))
			if tc.secret == nil {
				g.Expect(want).To(gomega.Equal(d), "the zero Key binds nothing")
			}
		})
	}
}

func TestNewKey_RefusesShortKeys(t *testing.T) {
	_, err := NewKey(make([]byte, MinKeyBytes-1))
	gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("fewer than the 32 required")))
}

// The expected signatures were computed outside Go (OpenSSL 3.0), with K
// the key's 32 bytes of 0x07 in hex (K=$(printf '07%.0s' $(seq 32))):
//
//	D=$(openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt hexkey:$K -kdfopt salt:reroll.dev/derive/v2 -kdfopt info:state HKDF | tr -d : | tr A-F a-f)
//	printf 'uid-1\0reroll.dev/rolled-at\x002026-11-22T12:00:00Z\0' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$D -r | cut -c1-32
//
// and, for the v1 derivation of Reroll before it (v1 below):
//
//	D=$(printf 'reroll.dev derived key: state' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K -r | cut -d' ' -f1)
func TestKey_StateMAC(t *testing.T) {
	g := gomega.NewWithT(t)
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cases := map[string]struct {
		// uid, name and value are what is signed.
		uid, name, value string
		// want is the signature.
		want string
	}{
		"a rolled-at": {uid: "uid-1", name: "reroll.dev/rolled-at", value: "2026-11-22T12:00:00Z", want: "cb4d389afe57b8e5f8eb7c4149ab4738"},
		"the same value on another object signs differently": {uid: "uid-2", name: "reroll.dev/rolled-at", value: "2026-11-22T12:00:00Z", want: "f29e9cf4cb46b8e9c233f2120049054c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(k.StateMAC(tc.uid, tc.name, tc.value)).To(gomega.Equal(tc.want))
		})
	}
	// NewKey derives the signing key once; every Key of the same secret,
	// whichever way it was made, signs the same.
	rotated, err := k.WithPrevious(bytes.Repeat([]byte{9}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for name, same := range map[string]Key{"rotated": rotated, "with a v1 deadline": k.WithV1DerivationsUntil(time.Now().Add(time.Hour)),
		"its legacy scheme": k.Legacy(), "made without NewKey": {secret: k.secret}} {
		g.Expect(same.StateMAC("uid-1", "reroll.dev/rolled-at", "2026-11-22T12:00:00Z")).To(gomega.Equal("cb4d389afe57b8e5f8eb7c4149ab4738"), name)
	}
	other, err := NewKey(bytes.Repeat([]byte{8}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(other.StateMAC("uid-1", "reroll.dev/rolled-at", "2026-11-22T12:00:00Z")).NotTo(gomega.Equal("cb4d389afe57b8e5f8eb7c4149ab4738"), "another key signs differently")
}

// v1 is the signature of the rolled-at above by a Reroll before the v2
// derivation (the commands above TestKey_StateMAC).
const v1 = "c3db983a2922d8f7395add21846f9972"

func TestKey_VerifyStateMAC(t *testing.T) {
	base, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := map[string]struct {
		// until is the v1 derivation's deadline (WithV1DerivationsUntil).
		until time.Time
		// mac is the signature checked.
		mac string
		// ok and current are what VerifyStateMAC returns.
		ok, current bool
	}{
		"today's signature verifies and is current":                                            {mac: "cb4d389afe57b8e5f8eb7c4149ab4738", ok: true, current: true},
		"a signature made before the upgrade verifies until the deadline, to be written again": {until: now.Add(time.Hour), mac: v1, ok: true},
		"a signature made before the upgrade does not verify after the deadline":               {until: now.Add(-time.Second), mac: v1},
		"a signature made before the upgrade does not verify without a deadline":               {mac: v1},
		"another signature does not verify, even before the deadline":                          {until: now.Add(time.Hour), mac: "00000000000000000000000000000000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := base.WithV1DerivationsUntil(tc.until)
			ok, current := k.VerifyStateMAC("uid-1", "reroll.dev/rolled-at", "2026-11-22T12:00:00Z", tc.mac)
			if ok != tc.ok || current != tc.current {
				t.Errorf("VerifyStateMAC = %v, %v; want %v, %v", ok, current, tc.ok, tc.current)
			}
		})
	}
}

// The v1 derivation was the HMAC under the installation key of a fixed
// text: the same function as a legacy record's digest of a value, so a
// tenant whose ConfigMap held that text under a Reroll of the legacy
// scheme read the derived key on their workload's record. Derive is
// HKDF: no digest under the key equals a derived key.
func TestKey_DeriveIsNoDigestOfAValue(t *testing.T) {
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	for _, purpose := range []string{"state", "change-set", "projection"} {
		text := []byte("reroll.dev derived key: " + purpose)
		legacyRecord := k.Legacy().Digest("ConfigMap", "tenant", "bait", "v", text)
		// Positive control: the flaw is real for the v1 derivation.
		if legacyRecord != hex.EncodeToString(k.DeriveV1(purpose)) {
			t.Fatalf("%s: the legacy digest of the v1 derivation's text is not the v1 key: the test reads the scheme wrong", purpose)
		}
		derived := hex.EncodeToString(k.Derive(purpose))
		for name, d := range map[string]string{
			"the legacy digest of the v1 text": legacyRecord,
			"a bound digest of the v1 text":    k.Digest("ConfigMap", "tenant", "bait", "v", text),
			"the digest of the purpose alone":  k.Legacy().Digest("ConfigMap", "tenant", "bait", "v", []byte(purpose)),
		} {
			if d == derived {
				t.Errorf("%s: Derive equals %s", purpose, name)
			}
		}
	}
}

// Digests are bound to their place. The expected values were computed
// outside Go, with K the key's 32 bytes of 0x07 in hex:
//
//	printf 'reroll.dev/digest/v2\0Secret\0ns-a\0db\0password\0correct-horse' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
//	printf 'correct-horse' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K              # the legacy scheme
//	printf 'reroll.dev key id' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K | cut -c1-8                         # legacy ID
//	printf 'reroll.dev key id, digests bound to their place' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K        # ID
func TestKey_DigestBoundToPlace(t *testing.T) {
	g := gomega.NewWithT(t)
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	v := []byte("correct-horse")
	cases := map[string]struct {
		// key is the Key; kind, namespace, name and data key the place.
		key                       Key
		kind, namespace, name, dk string
		// want is the digest.
		want string
	}{
		"a Secret's key": {key: k, kind: "Secret", namespace: "ns-a", name: "db", dk: "password",
			want: "1670f27de6091520e43f902a5882b6a82ca93a26bcf57b5b1d78820177787520"},
		"the same value in another namespace is unrelated": {key: k, kind: "Secret", namespace: "ns-b", name: "db", dk: "password",
			want: "a83b922551f123ba38a6646d368816b7c22a8aab0aef4e349aebdc4a3ea72de8"},
		"the legacy scheme digests the value alone": {key: k.Legacy(), kind: "Secret", namespace: "ns-a", name: "db", dk: "password",
			want: "dc86a23fc9d659c79dc0aea48a130cef8a7db5a0b0e9079ec1c2699df8360a3b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(tc.key.Digest(tc.kind, tc.namespace, tc.name, tc.dk, v)).To(gomega.Equal(tc.want))
		})
	}
	g.Expect(k.Legacy().ID()).To(gomega.Equal("0b78d596"))
	g.Expect(k.ID()).To(gomega.Equal("2c76e7f2"))
	// Every part of the place counts: kind, name and data key too.
	seen := map[string]bool{}
	for _, p := range [][4]string{{"Secret", "ns-a", "db", "password"}, {"ConfigMap", "ns-a", "db", "password"}, {"Secret", "ns-a", "db2", "password"}, {"Secret", "ns-a", "db", "user"}} {
		seen[k.Digest(p[0], p[1], p[2], p[3], v)] = true
	}
	g.Expect(seen).To(gomega.HaveLen(4))
}

// TestKey_CompatBoundToPlace: the value written with --keyed-compat-hashes
// in place of another tool's hash is bound to what it is the hash of.
// Expected values, with K=$(printf '07%.0s' $(seq 32)) and Reloader's SHA-1
// of a=2 (printf a=2 | sha1sum: d6dbf8a400e3e00c352f9ceeca960bdf64ab6377):
//
//	printf 'reroll.dev/compat/v1\0ConfigMap\0ns-a\0foo\0d6dbf8a400e3e00c352f9ceeca960bdf64ab6377' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
//	printf 'reroll.dev/compat/v1\0ConfigMap\0ns-b\0foo\0d6dbf8a400e3e00c352f9ceeca960bdf64ab6377' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
//	printf 'reroll.dev/compat/v1\0Deployment\0ns-a\0web\0d6dbf8a400e3e00c352f9ceeca960bdf64ab6377' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
//	printf d6dbf8a400e3e00c352f9ceeca960bdf64ab6377 | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K   # before the binding
func TestKey_CompatBoundToPlace(t *testing.T) {
	g := gomega.NewWithT(t)
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	const sha1 = "d6dbf8a400e3e00c352f9ceeca960bdf64ab6377"
	cases := map[string]struct {
		// kind, namespace and name are what the hash is of.
		kind, namespace, name string
		// want is the keyed value.
		want string
	}{
		"a ConfigMap":                        {kind: "ConfigMap", namespace: "ns-a", name: "foo", want: "9a03fc205b66b6fc692a44c911a0d14bc065efce2eeb649f653fa7cadcb3bb6e"},
		"the same data in another namespace": {kind: "ConfigMap", namespace: "ns-b", name: "foo", want: "4f41f7dc0a367702ff49fec26722e0b0d5d7e8b96ce2ab4babcbe2b3fe994b23"},
		"a workload's hash":                  {kind: "Deployment", namespace: "ns-a", name: "web", want: "16148da9fd411617b4a007fa6207b5138cec1aef6ab297acdddb4aa4b6bc99bf"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(k.Compat(tc.kind, tc.namespace, tc.name, sha1)).To(gomega.Equal(tc.want))
		})
	}
	// The unbound value of before, which any namespace could reproduce.
	g.Expect(k.Value([]byte(sha1))).To(gomega.Equal("33c6f385370d747ccaee422d2f3d2279524164b02208fe0a9c5da4061f2e2181"))
}

// The expected IDs were computed outside Go, with K the key's 32 bytes of
// 0x07 in hex (K=$(printf '07%.0s' $(seq 32))):
//
//	D=$(printf 'reroll.dev derived key: change-set' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K -r | cut -d' ' -f1)
//	printf '\0ConfigMap\0ca-bundle\0d3486ae9136e7856bc42212385ea797094475802' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$D -r | cut -c1-16
//
// (the scope first: "" for shared, "tenant" for a namespace's own set).
func TestKey_ChangeSetID(t *testing.T) {
	g := gomega.NewWithT(t)
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	other, err := NewKey(bytes.Repeat([]byte{8}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	const content = "d3486ae9136e7856bc42212385ea797094475802"
	cases := map[string]struct {
		// key and scope, kind, name, content are the input.
		key                        Key
		scope, kind, name, content string
		// want is the ID.
		want string
	}{
		"copies shared across namespaces": {key: k, kind: "ConfigMap", name: "ca-bundle", content: content, want: "e442db4b6b312d28"},
		"a namespace's own set":           {key: k, scope: "tenant", kind: "ConfigMap", name: "ca-bundle", content: content, want: "e8e5f9317296ffbe"},
		"a deletion":                      {key: k, kind: "ConfigMap", name: "ca-bundle", content: "deleted", want: "2b603054e1363a0a"},
		"another installation's key":      {key: other, kind: "ConfigMap", name: "ca-bundle", content: content, want: "7627742fe0dac8cf"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(tc.key.ChangeSetID(tc.scope, tc.kind, tc.name, tc.content)).To(gomega.Equal(tc.want))
		})
	}
	// Domain-separated: never a value's digest (of any length) under k.
	g.Expect(k.Value([]byte(content))).NotTo(gomega.HavePrefix("e442db4b6b312d28"))
}

func TestKey_OlderKeys(t *testing.T) {
	current := bytes.Repeat([]byte{7}, MinKeyBytes)
	previous := bytes.Repeat([]byte{8}, MinKeyBytes)
	k, err := NewKey(current)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := k.WithPrevious(previous)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewKey(previous)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ks []Key) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.ID())
		}
		return out
	}
	cases := map[string]struct {
		// key is the key whose Older is asked.
		key Key
		// want are the IDs of the keys Older must return, in order.
		want []string
	}{
		"a key compares its own legacy scheme":                        {key: k, want: []string{k.Legacy().ID()}},
		"during a rotation, also the previous key under both schemes": {key: rotated, want: []string{k.Legacy().ID(), p.ID(), p.Legacy().ID()}},
		"a key with its v1 deadline set keeps the same older keys":    {key: rotated.WithV1DerivationsUntil(time.Unix(1, 0)), want: []string{k.Legacy().ID(), p.ID(), p.Legacy().ID()}},
		"the legacy scheme has none":                                  {key: k.Legacy(), want: nil},
		"the zero Key has none":                                       {key: Key{}, want: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			older := c.key.Older()
			g.Expect(ids(older)).To(gomega.Equal(c.want))
			for i, o := range older {
				g.Expect(o.IsLegacy()).To(gomega.Equal(i%2 == 0), "the legacy schemes are the first and third")
			}
			// A caller that changes the answer changes nothing of the
			// key's: Older answers the same the next time.
			for i := range older {
				older[i] = Key{id: "changed"}
			}
			g.Expect(ids(c.key.Older())).To(gomega.Equal(c.want))
		})
	}
}
